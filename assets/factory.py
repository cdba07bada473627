"""The asset factory: every query of a `SqlProject` becomes one multi-asset whose specs draw the
lineage source topic → repartition topic → join → output topic and Delta table.

Source topics no query writes are observable source assets (their data version is the sum of the
end offsets, so new data shows in the UI); topics a query writes are that query's outputs, so a
query reading another query's output topic hangs below it in the graph. Materialising the
multi-asset runs the query once (`available_now`) or until stopped (`continuous`) through the
`engine` resource's `Engine`, with the `Query` the definitions were built from (compiled once, when
the code location loaded; its code version is the hash of the SQL text).
"""

import dataclasses
import os
import queue
import socket
import threading

import dagster as dg

from assets.keys import FINGERPRINT, delta_key, query_key, report_metadata, topic_key
from assets.tables import table_version
from resources import EngineResource
from streamjoin.app.engine import MODES, ON_DATA_LOSS, Engine
from streamjoin.app.project import Query, SqlProject
from streamjoin.runtime.report import RunReport

PID_TAG = "streamjoin/pid"  # the run worker's process, so the restart sensor can spot dead runs
HOST_TAG = "streamjoin/host"


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
    """What the factory built: the source-topic assets and one multi-asset per query name."""

    sources: tuple[dg.AssetsDefinition, ...]
    queries: dict[str, dg.AssetsDefinition]

    def all(self) -> list[dg.AssetsDefinition]:
        return [*self.sources, *self.queries.values()]


def build_assets(project: SqlProject, engine: EngineResource) -> QueryAssets:
    """`engine` is the resource the definitions use: the Delta table assets show its paths."""
    written = {q.output_topic: q for q in project.queries}
    readers: dict[str, str] = {}  # topic -> group of its first reader (keeps folders together)
    for q in project.queries:
        for topic in q.source_topics:
            readers.setdefault(topic, q.group)
    sources = {s.topic: s for s in project.sources}
    external = [_source_topic_asset(topic, group,
                                    sources[topic].partitions if topic in sources else None)
                for topic, group in readers.items() if topic not in written]
    return QueryAssets(tuple(external), {q.name: _query_asset(q, engine.delta_path(q))
                                         for q in project.queries})


def _source_topic_asset(topic: str, group: str, partitions: int | None) -> dg.AssetsDefinition:
    @dg.observable_source_asset(key=topic_key(topic), group_name=group, kinds={"kafka"},
                                description=f"Kafka source topic `{topic}`",
                                metadata={"partitions": partitions or 0},
                                required_resource_keys={"engine"})
    def observe(context) -> dg.ObserveResult:
        ends = context.resources.engine.end_offsets(topic)
        total = sum(ends.values())
        return dg.ObserveResult(data_version=dg.DataVersion(str(total)),
                                metadata={"end_offsets_total": dg.MetadataValue.int(total),
                                          "partitions": dg.MetadataValue.int(len(ends))})

    return observe


def repartition_feeds(query: Query) -> dict[str, tuple[str, ...]]:
    """{repartition topic: the source topics it re-keys}."""
    return dict(query.repartition_inputs)


def describe(query: Query) -> str:
    return (f"`{query.path.name}` ({query.dialect}, mode {query.mode})\n\n"
            f"```sql\n{query.sql.strip()}\n```\n\nEXPLAIN\n\n```\n{query.explain.strip()}\n```")


def _specs(query: Query, delta_path: str) -> list[dg.AssetSpec]:
    feeds = repartition_feeds(query)
    repartitioned = {t for topics in feeds.values() for t in topics}
    tags = {"streamjoin/mode": query.mode}
    repartitions = [dg.AssetSpec(topic_key(topic), deps=[topic_key(t) for t in inputs],
                                 group_name=query.group, kinds={"kafka"}, tags=tags,
                                 description=f"Internal repartition topic of `{query.name}`")
                    for topic, inputs in feeds.items()]
    join_deps = [r.key for r in repartitions] + [topic_key(t) for t in query.source_topics
                                                 if t not in repartitioned]
    join = dg.AssetSpec(query_key(query), deps=join_deps, group_name=query.group,
                        code_version=query.code_version, description=describe(query),
                        kinds={"spark"}, tags=tags,
                        metadata={"sql_path": dg.MetadataValue.path(str(query.path)),
                                  "dialect": query.dialect})
    output = dg.AssetSpec(topic_key(query.output_topic), deps=[join.key], group_name=query.group,
                          kinds={"kafka"}, tags=tags,
                          description=f"{query.output_kind} topic written by `{query.name}`")
    table = dg.AssetSpec(delta_key(query), deps=[join.key], group_name=query.group,
                         kinds={"delta"}, tags=tags,
                         metadata={"path": dg.MetadataValue.path(delta_path)},
                         description=f"Delta table written by `{query.name}`")
    return [*repartitions, join, output, table]


def _query_asset(query: Query, delta_path: str) -> dg.AssetsDefinition:
    @dg.multi_asset(name=query.name, specs=_specs(query, delta_path), can_subset=False)
    def run(context: dg.AssetExecutionContext, config: StreamRunConfig, engine: EngineResource):
        mode = config.mode or query.mode
        if mode not in MODES:
            raise dg.Failure(f"mode must be one of {MODES}, got {mode!r}")
        if config.on_data_loss and config.on_data_loss not in ON_DATA_LOSS:
            raise dg.Failure(f"on_data_loss must be one of {ON_DATA_LOSS}, got {config.on_data_loss!r}")
        context.instance.add_run_tags(context.run.run_id, {PID_TAG: str(os.getpid()),
                                                       HOST_TAG: socket.gethostname()})

        client = engine.get_engine()
        report = yield from _run_with_progress(client, query, mode, config.stop_after_s or None,
                                               config.on_data_loss or None)
        metadata = report_metadata(report)
        for topic in query.repartition_topics:  # upstream of the join: yielded first
            yield dg.MaterializeResult(asset_key=topic_key(topic))
        yield dg.MaterializeResult(
            asset_key=query_key(query),
            metadata=metadata | {FINGERPRINT: query.state_fingerprint, "mode": mode})
        yield dg.MaterializeResult(asset_key=topic_key(query.output_topic),
                                   metadata={"output_rows": metadata["output_rows"]})
        path = report.delta_path or client.delta_path(query)
        version = report.delta_version if report.delta_version is not None else table_version(path)
        table = {"output_rows": metadata["output_rows"], "path": dg.MetadataValue.path(path)}
        if version is not None:
            table["delta_version"] = dg.MetadataValue.int(version)
        yield dg.MaterializeResult(asset_key=delta_key(query), metadata=table)

    return run


def _run_with_progress(engine: Engine, query: Query, mode: str, stop_after_s: float | None,
                       on_data_loss: str | None):
    """Run the query in a worker thread and yield an AssetObservation per progress report as it
    arrives (events logged from another thread would only show when the step ends); returns the
    final RunReport. A continuous run thus shows live figures in the UI."""
    updates: queue.Queue[RunReport | None] = queue.Queue()
    outcome: dict = {}

    def work() -> None:
        try:
            # The engine may pass the same (mutable) report each time: queue a snapshot.
            outcome["report"] = engine.run(
                query, mode=mode, stop_after_s=stop_after_s, on_data_loss=on_data_loss,
                on_progress=lambda report: updates.put(dataclasses.replace(report)))
        except BaseException as error:  # re-raised in the step's thread below
            outcome["error"] = error
        finally:
            updates.put(None)

    threading.Thread(target=work, name=f"streamjoin-{query.name}", daemon=True).start()
    while (update := updates.get()) is not None:
        yield dg.AssetObservation(asset_key=query_key(query), metadata=report_metadata(update))
    if "error" in outcome:
        raise outcome["error"]
    return outcome["report"]
