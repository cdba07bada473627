"""Asset checks on each query asset, each with a description of what it proves. They run after
every materialization (the jobs and sensors select them with the query), and a check with no data
to judge says so as a warning — it never passes over nothing. `live_status` is also reported by
the `query_status` sensor between runs. Each check calls the `engine` resource's `Engine` with the
`Query` the definitions were built from."""

import functools
import json
from collections import Counter

import dagster as dg

from assets.factory import SPARK_POOL
from assets.keys import QUERY_TAG, latest_metadata, query_key
from assets.state import broken_state, query_state
from assets.tables import latest_time_before, rows_between
from resources import EngineResource
from resources.platform import PlatformConfig
from streamjoin.app.engine import Engine
from streamjoin.app.project import BrokenFile, Query, SqlProject

COPARTITIONED, LAG, DEAD_LETTERS = "copartitioned", "consumer_lag_under_limit", "no_dead_letters"
REPLAY, LIVE = "streaming_equals_batch", "live_status"
SHOWN_DIFFERENCES = 5

DESCRIPTIONS = {
    COPARTITIONED: "Each join's two inputs, as they reach the join (after any repartition topic), "
                   "have the same partition count on the broker: otherwise records with equal "
                   "keys land in different tasks and never meet. Warns while an input topic "
                   "does not exist yet.",
    LAG: "The records on the input topics not yet in the query's checkpoint are at most "
         "STREAMJOIN_MAX_CONSUMER_LAG (a warning: the next run catches up). Warns while the "
         "input topics hold no records.",
    DEAD_LETTERS: "The latest run dead-lettered nothing: every input record decoded and every "
                  "result fitted its topic and Delta table (the rejected ones are in the "
                  "`-dead-letters` topic and table, with their reason). Warns before any run "
                  "and after a run that read no records.",
    REPLAY: "Streaming equals batch: the rows streaming wrote to the Delta table for the latest "
            "closed time window that holds data equal, as a multiset, the rows Engine.backfill "
            "recomputes for that window in batch (differences listed). Warns when there is no "
            "data to compare.",
    LIVE: "The query's live state — running, queued, stopping, stopped (why), failing (the "
          "error), lagging, up to date, never run, needs reset, data loss, broken — and its "
          "consumer lag, refreshed by the query_status sensor. Passes when running or caught up.",
}


def build_checks(project: SqlProject, config: PlatformConfig) -> list[dg.AssetChecksDefinition]:
    return [*(_query_checks(query, config) for query in project.queries),
            *(_broken_checks(broken) for broken in project.broken)]


def check_names(query: Query) -> list[str]:
    names = [LAG, DEAD_LETTERS, REPLAY, LIVE]
    return names if query.is_repartition else [COPARTITIONED, *names]


def _spec(key: dg.AssetKey, name: str) -> dg.AssetCheckSpec:
    return dg.AssetCheckSpec(name, asset=key, description=DESCRIPTIONS[name])


def _query_checks(query: Query, config: PlatformConfig) -> dg.AssetChecksDefinition:
    key = query_key(query)

    @dg.multi_asset_check(name=f"{query.name}_checks", can_subset=True, pool=SPARK_POOL,
                          specs=[_spec(key, name) for name in check_names(query)])
    def run(context: dg.AssetCheckExecutionContext, engine: EngineResource):
        client = engine.get_engine()  # no broker or Spark until a check needs them
        # Asked once, by the first check that needs to know which inputs exist and hold records.
        topics = functools.cache(lambda: engine.describe_topics(list(input_topics(query))))
        checks = {
            COPARTITIONED: lambda: copartitioned(client, query, topics()),
            LAG: lambda: lag_under_limit(client, query, config.max_consumer_lag, topics()),
            DEAD_LETTERS: lambda: no_dead_letters(context.instance, key),
            REPLAY: lambda: streaming_equals_batch(client, query, config),
            LIVE: lambda: live_status(context, client, query, config),
        }
        for check_key in context.selected_asset_check_keys:
            yield checks[check_key.name]()

    return run


def _broken_checks(broken: BrokenFile) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=query_key(broken), name=LIVE, description=DESCRIPTIONS[LIVE])
    def run() -> dg.AssetCheckResult:
        return state_result(query_key(broken), broken_state(broken.error))

    return run


def state_result(key: dg.AssetKey, state) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(asset_key=key, check_name=LIVE, passed=state.passed,
                               severity=state.severity, description=state.line,
                               metadata=state.metadata())


def live_status(context, engine: Engine, query: Query, config: PlatformConfig):
    run = context.instance.get_run_by_id(context.run.run_id)  # tags as of now, not as launched
    this_run = run if run.tags.get(QUERY_TAG) == query.name else None
    return state_result(query_key(query),
                        query_state(context.instance, engine, query, config, this_run))


def input_topics(query: Query) -> tuple[str, ...]:
    """The topics the query's joins read: its sources and its repartition topics."""
    return (*query.source_topics, *query.repartition_topics)


def copartitioned(engine: Engine, query: Query, described: dict) -> dg.AssetCheckResult:
    """`described`: the resource's describe_topics of the input topics (existing ones only)."""
    key = query_key(query)
    problems = engine.copartitioning_problems(query)
    metadata = {"problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none")}
    missing = [topic for topic in input_topics(query) if topic not in described]
    # Declared counts that disagree fail now (creating the topics as declared keeps them apart);
    # declared counts that agree prove nothing until the broker holds the topics.
    if missing and not problems:
        return _no_data(key, COPARTITIONED, f"{', '.join(missing)} not created yet: only the "
                                            "declared partition counts agree", metadata)
    return dg.AssetCheckResult(asset_key=key, check_name=COPARTITIONED, passed=not problems,
                               metadata=metadata)


def lag_under_limit(engine: Engine, query: Query, limit: int,
                    described: dict) -> dg.AssetCheckResult:
    """`described`: as for `copartitioned`. The end offsets say whether any record was ever
    written: a lag of 0 over a log that never held one is no evidence of keeping up."""
    key = query_key(query)
    held = {topic: sum(described[topic]["end_offsets"].values()) if topic in described else None
            for topic in query.source_topics}
    if not any(held.values()):
        where = ", ".join(f"{topic} ({'not created' if n is None else 'empty'})"
                          for topic, n in held.items())
        return _no_data(key, LAG, f"no records on the input topics yet: {where}",
                        {"limit": dg.MetadataValue.int(limit)})
    lag = engine.consumer_lag(query)
    return dg.AssetCheckResult(
        asset_key=key, check_name=LAG, passed=lag <= limit,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"consumer_lag": dg.MetadataValue.int(lag), "limit": dg.MetadataValue.int(limit)})


def _no_data(key: dg.AssetKey, name: str, why: str, metadata: dict | None = None):
    return dg.AssetCheckResult(asset_key=key, check_name=name, passed=False,
                               severity=dg.AssetCheckSeverity.WARN, description=f"no data: {why}",
                               metadata={"evaluated": dg.MetadataValue.text(f"no data: {why}"),
                                         **(metadata or {})})


def no_dead_letters(instance: dg.DagsterInstance, key: dg.AssetKey) -> dg.AssetCheckResult:
    metadata = latest_metadata(instance, key)
    if metadata is None:
        return _no_data(key, DEAD_LETTERS, "not materialized yet: no run to judge")
    dead, read = int(metadata.get("dead_letters", 0)), metadata.get("input_rows")
    figures = {"dead_letters": dg.MetadataValue.int(dead)}
    if read is not None:
        figures["input_rows"] = dg.MetadataValue.int(int(read))
    # A dead letter fails whatever was read (a repartition step may reject records too).
    if dead == 0 and read == 0:
        return _no_data(key, DEAD_LETTERS, "the latest run read no records: nothing could be "
                                           "dead-lettered", figures)
    return dg.AssetCheckResult(asset_key=key, check_name=DEAD_LETTERS, passed=dead == 0,
                               metadata=figures)


def _canonical(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def replay_window(path: str, config: PlatformConfig) -> dg.TimeWindow | None:
    """The latest closed backfill window holding a streamed row (None: no such row)."""
    closed = config.closed_partitions()
    last = closed.get_last_partition_window()
    latest = latest_time_before(path, int(last.end.timestamp() * 1000)) if last else None
    if latest is None or latest < closed.start.timestamp() * 1000:
        return None
    return closed.time_window_for_partition_key(closed.get_partition_key_for_timestamp(latest / 1000))


def streaming_equals_batch(engine: Engine, query: Query,
                           config: PlatformConfig) -> dg.AssetCheckResult:
    """Read the window's rows as streaming wrote them, recompute the window in batch
    (`Engine.backfill` replaces it in the table) and compare the two as multisets of rows."""
    key, path = query_key(query), engine.delta_path(query)
    window = replay_window(path, config)
    if window is None:
        return _no_data(key, REPLAY, "no closed time window holds a streamed row yet: nothing to "
                                     "compare", {"delta_path": dg.MetadataValue.path(path)})
    start_ms, end_ms = (int(t.timestamp() * 1000) for t in (window.start, window.end))
    streamed = Counter(map(_canonical, rows_between(path, start_ms, end_ms)))
    try:
        engine.backfill(query, start_ms, end_ms)
    except NotImplementedError as error:  # an engine limit, not a wrong result: warn only
        return dg.AssetCheckResult(asset_key=key, check_name=REPLAY, passed=False,
                                   severity=dg.AssetCheckSeverity.WARN,
                                   description=f"cannot replay in batch: {error}")
    replayed = Counter(map(_canonical, rows_between(path, start_ms, end_ms)))
    only_streamed, only_batch = streamed - replayed, replayed - streamed
    shown = [f"- streaming only: {row}" for row in list(only_streamed)[:SHOWN_DIFFERENCES]] + \
            [f"- batch only: {row}" for row in list(only_batch)[:SHOWN_DIFFERENCES]]
    return dg.AssetCheckResult(
        asset_key=key, check_name=REPLAY, passed=not only_streamed and not only_batch,
        metadata={"window_start_ms": dg.MetadataValue.int(start_ms),
                  "window_end_ms": dg.MetadataValue.int(end_ms),
                  "window": dg.MetadataValue.text(f"{window.start:%Y-%m-%d %H:%M} – "
                                                  f"{window.end:%Y-%m-%d %H:%M} UTC"),
                  "delta_path": dg.MetadataValue.path(path),
                  "streamed_rows": dg.MetadataValue.int(sum(streamed.values())),
                  "batch_rows": dg.MetadataValue.int(sum(replayed.values())),
                  "differences": dg.MetadataValue.md("\n".join(shown) or "none")})
