"""The asset factory: every query of a `SqlProject` becomes one multi-asset whose specs draw the
lineage source topic → repartition topic → query → output topic, Delta table and dead letters
(topic and table).

Source topics no query writes are observable source assets (their data version is the sum of the
end offsets, observed by the `query_status` sensor, so new data shows in the UI); topics a query
writes are that query's outputs, so a query reading another query's output topic hangs below it.
Materialising the multi-asset runs the query once (`available_now`) or until stopped
(`continuous`) through the `engine` resource's `Engine`, with the `Query` the definitions were
built from (compiled once, when the code location loaded; its code version is the hash of the SQL
text). A file that does not compile is an asset too: its description starts with the positioned
error, and materialising it fails with that error.
"""

import dataclasses
import os
import socket
import textwrap

import dagster as dg

from assets import preview
from assets.keys import (DEAD_LETTERS, FINGERPRINT, HOST_TAG, MODE_TAG, PID_TAG,
                         dead_letter_table_key, dead_letter_topic_key, delta_key, query_key,
                         report_metadata, role_tags, topic_key)
from assets.running import run_query
from assets.tables import table_version
from resources import EngineResource
from streamjoin.app import topics
from streamjoin.app.engine import MODES, ON_DATA_LOSS, RunReport
from streamjoin.app.project import BrokenFile, Query, SqlProject

# Every step that starts Spark claims a slot of this pool: the instance (dagster.yaml) limits how
# many such runs go at once, however they were launched; stop, reset and sample jobs never wait.
SPARK_POOL = "spark"


class StreamRunConfig(dg.Config):
    """Run config of a streaming materialization (defaults: the query's own `-- mode:`)."""

    mode: str = ""  # available_now | continuous; empty = the query's mode
    stop_after_s: float = 0.0  # continuous only: stop after this many seconds (0 = run forever)
    # A checkpoint offset outside a topic's log (topic recreated, broker restarted empty,
    # retention): fail (naming topic, partition, offset and the log's range), or go on from the
    # log's earliest or latest offset; empty = STREAMJOIN_ON_DATA_LOSS, else fail.
    on_data_loss: str = ""


@dataclasses.dataclass(frozen=True)
class QueryAssets:
    """What the factory built: the source-topic assets, one multi-asset per query name, and one
    failing asset per file that does not compile."""

    sources: tuple[dg.AssetsDefinition, ...]
    queries: dict[str, dg.AssetsDefinition]
    broken: dict[str, dg.AssetsDefinition] = dataclasses.field(default_factory=dict)
    source_topics: tuple[str, ...] = ()  # the topics of `sources`

    def all(self) -> list[dg.AssetsDefinition]:
        return [*self.sources, *self.queries.values(), *self.broken.values()]


def build_assets(project: SqlProject, engine: EngineResource) -> QueryAssets:
    """`engine` is the resource the definitions use: the Delta table assets show its paths."""
    written = {q.output_topic: q for q in project.queries}
    readers: dict[str, str] = {}  # topic -> group of its first reader (keeps folders together)
    for q in project.queries:
        for topic in q.source_topics:
            readers.setdefault(topic, q.group)
    sources = {s.topic: s for s in project.sources}
    external = [topic for topic in readers if topic not in written]
    return QueryAssets(
        tuple(_source_topic_asset(topic, readers[topic],
                                  sources[topic].partitions if topic in sources else None)
              for topic in external),
        {q.name: _query_asset(q, engine.delta_path(q)) for q in project.queries},
        {b.name: broken_asset(b) for b in project.broken}, tuple(external))


def _source_topic_asset(topic: str, group: str, partitions: int | None) -> dg.AssetsDefinition:
    @dg.observable_source_asset(key=topic_key(topic), group_name=group, kinds={"kafka"},
                                description=f"Kafka source topic `{topic}`",
                                metadata={"partitions": partitions or 0},
                                required_resource_keys={"engine"})
    def observe(context) -> dg.ObserveResult:
        return observe_topic(context.resources.engine, topic)

    return observe


def observe_topic(engine: EngineResource, topic: str) -> dg.ObserveResult:
    """Data version = the sum of the end offsets (new records make the readers unsynced)."""
    ends = engine.end_offsets(topic)
    total = sum(ends.values())
    return dg.ObserveResult(data_version=dg.DataVersion(str(total)),
                            metadata={"end_offsets_total": dg.MetadataValue.int(total),
                                      "partitions": dg.MetadataValue.int(len(ends))})


def describe(query: Query) -> str:
    return (f"`{query.path.name}` ({query.dialect}, declared mode {query.mode})\n\n"
            f"{controls(query)}\n\n"
            f"```sql\n{query.sql.strip()}\n```\n\nEXPLAIN\n\n```\n{wrap_explain(query.explain.strip())}\n```")


EXPLAIN_WIDTH = 88  # what the asset page's description column shows at 1600 px: longer lines were cut off


def wrap_explain(text: str, width: int = EXPLAIN_WIDTH) -> str:
    """EXPLAIN's long lines wrapped between fields, continued under their tree branch."""
    lines = []
    for line in text.splitlines():
        body = line.lstrip("│├└─ ")
        prefix = line[:len(line) - len(body)]
        hang = prefix.replace("├─", "│ ").replace("└─", "  ") + "    "
        lines += textwrap.wrap(body, width, initial_indent=prefix, subsequent_indent=hang,
                               break_long_words=False, break_on_hyphens=False) or [line]
    return "\n".join(lines)


def controls(query: Query) -> str:
    """Links from the asset page to the query's jobs (the UI's /guess/<job> route finds a job in
    whichever code location has it): start is "Materialize all" on its page, stop and reset
    "Launch Run" on their launchpads."""
    name = query.name
    runs = [f"[repartition_{name}](/guess/repartition_{name})"] if query.is_repartition else [
        f"[start_{name}](/guess/start_{name}) (continuous)",
        f"[stop_{name}](/guess/stop_{name}/playground)"]
    return "Jobs: " + " · ".join([*runs, f"[reset_{name}](/guess/reset_{name}/playground) "
                                         "(start over: checkpoint, topics and tables)"])


def _specs(query: Query, delta_path: str) -> list[dg.AssetSpec]:
    feeds = dict(query.repartition_inputs)  # {repartition topic: the source topics it re-keys}
    repartitioned = {t for topics in feeds.values() for t in topics}
    # What the file declares (`stream_` runs it so); a run's own mode is on the run and in the
    # query's live status (a definition tag cannot change while a run goes).
    tags = {"streamjoin/declared_mode": query.mode}
    common = {"group_name": query.group, "tags": tags}
    repartitions = [dg.AssetSpec(topic_key(topic), deps=[topic_key(t) for t in inputs],
                                 kinds={"kafka"}, **common,
                                 description=f"Internal repartition topic of `{query.name}`")
                    for topic, inputs in feeds.items()]
    join_deps = [r.key for r in repartitions] + [topic_key(t) for t in query.source_topics
                                                 if t not in repartitioned]
    join = dg.AssetSpec(query_key(query), deps=join_deps, code_version=query.code_version,
                        description=describe(query), kinds={"spark"}, **common,
                        metadata={"sql_path": dg.MetadataValue.path(str(query.path)),
                                  "dialect": query.dialect})
    output = {"deps": [join.key], **common}
    return [
        *repartitions, join,
        dg.AssetSpec(topic_key(query.output_topic), kinds={"kafka"}, **output,
                     description=f"{query.output_kind} topic written by `{query.name}`"),
        dg.AssetSpec(delta_key(query), kinds={"delta"}, **output,
                     metadata={"path": dg.MetadataValue.path(delta_path)},
                     description=f"Delta table written by `{query.name}`"),
        dg.AssetSpec(dead_letter_topic_key(query), kinds={"kafka"}, **output,
                     description=f"Dead letters of `{query.name}`: records it could not decode "
                                 "or write (JSON: source topic, partition, offset, reason)"),
        dg.AssetSpec(dead_letter_table_key(query), kinds={"delta"}, **output,
                     metadata={"path": dg.MetadataValue.path(delta_path + DEAD_LETTERS)},
                     description=f"Dead letters of `{query.name}` as a Delta table (source_topic, "
                                 "partition, offset, timestamp, key, value, reason)"),
    ]


def _query_asset(query: Query, delta_path: str) -> dg.AssetsDefinition:
    @dg.multi_asset(name=query.name, specs=_specs(query, delta_path), can_subset=False,
                    pool=SPARK_POOL)
    def run(context: dg.AssetExecutionContext, config: StreamRunConfig, engine: EngineResource):
        mode = config.mode or query.mode
        if mode not in MODES:
            raise dg.Failure(f"mode must be one of {MODES}, got {mode!r}")
        if config.on_data_loss and config.on_data_loss not in ON_DATA_LOSS:
            raise dg.Failure(f"on_data_loss must be one of {ON_DATA_LOSS}, got {config.on_data_loss!r}")
        # Whichever job runs the query (the UI's asset job too), its run is found by these tags.
        context.instance.add_run_tags(context.run.run_id, {
            **role_tags(query.name, "run"), MODE_TAG: mode, PID_TAG: str(os.getpid()),
            HOST_TAG: socket.gethostname()})

        client = engine.get_engine()
        report, stop = yield from run_query(context, client, query, mode,
                                            config.stop_after_s or None, config.on_data_loss)
        if report.input_rows == 0 and report.batches == 0:
            context.log.warning(f"{query.name} read no new records from {', '.join(query.source_topics)}"
                                " (empty topics? `make ui` seeds the sample data)")
        yield from _results(engine, query, report, stop,
                            {FINGERPRINT: query.state_fingerprint, "mode": mode})

    return run


def _results(resource: EngineResource, query: Query, report: RunReport, stop, extra: dict):
    """The materializations of one run, upstream first; the outputs with their latest rows."""
    engine = resource.get_engine()
    metadata = report_metadata(report)
    for topic in query.repartition_topics:
        yield dg.MaterializeResult(asset_key=topic_key(topic))
    yield dg.MaterializeResult(asset_key=query_key(query),
                               metadata=metadata | extra | (stop.metadata() if stop else {}))
    yield dg.MaterializeResult(asset_key=topic_key(query.output_topic), metadata={
        "output_rows": metadata["output_rows"],
        "latest_rows": preview.metadata_or_note(
            lambda: resource.latest_records(query.output_topic, query=query))})
    path = report.delta_path or engine.delta_path(query)
    version = report.delta_version if report.delta_version is not None else table_version(path)
    table = {"output_rows": metadata["output_rows"], "path": dg.MetadataValue.path(path),
             "latest_rows": preview.metadata_or_note(lambda: preview.table_tail(path, "__ts"))}
    if version is not None:
        table["delta_version"] = dg.MetadataValue.int(version)
    yield dg.MaterializeResult(asset_key=delta_key(query), metadata=table)
    dead = {"dead_letters": metadata["dead_letters"]}
    yield dg.MaterializeResult(asset_key=dead_letter_topic_key(query), metadata=dead | {
        "latest_rows": preview.metadata_or_note(lambda: resource.latest_dead_letters(query))})
    yield dg.MaterializeResult(asset_key=dead_letter_table_key(query), metadata=dead | {
        "path": dg.MetadataValue.path(path + DEAD_LETTERS),
        "latest_rows": preview.metadata_or_note(lambda: preview.dead_letter_rows(
            preview.table_tail(path + DEAD_LETTERS, "timestamp"), topics.topic_formats(query)))})


def broken_asset(broken: BrokenFile) -> dg.AssetsDefinition:
    """A file that does not compile, in its folder's group: the description's first line is the
    positioned error; materialising it fails with it."""
    error = str(broken.error)

    @dg.multi_asset(name=broken.name, specs=[dg.AssetSpec(
        query_key(broken), group_name=broken.group, kinds={"spark"},
        tags={"streamjoin/broken": "true"},
        description=f"{error.splitlines()[0]}\n\n```\n{error}\n```\n\n`{broken.path}` does not "
                    "compile: fix it and reload the code location.",
        metadata={"sql_path": dg.MetadataValue.path(str(broken.path))})])
    def run(context: dg.AssetExecutionContext):
        raise dg.Failure(description=error.splitlines()[0],
                         metadata={"error": dg.MetadataValue.md(f"```\n{error}\n```")})

    return run
