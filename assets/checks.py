"""Asset checks on each query asset: its join inputs are co-partitioned, its consumer lag is under
the configured limit, its last run dead-lettered nothing, and the last closed time window reads the
same from the streamed Delta table as from a batch recomputation. Each check calls the `engine`
resource's `Engine` with the `Query` the definitions were built from."""

import json
from collections import Counter

import dagster as dg

from assets.keys import latest_metadata, query_key
from assets.tables import rows_between
from resources import EngineResource
from resources.platform import PlatformConfig
from streamjoin.app.engine import Engine
from streamjoin.app.project import Query, SqlProject

COPARTITIONED, LAG, DEAD_LETTERS = "copartitioned", "consumer_lag_under_limit", "no_dead_letters"
REPLAY = "streaming_equals_batch"
SHOWN_DIFFERENCES = 5


def build_checks(project: SqlProject, config: PlatformConfig) -> list[dg.AssetChecksDefinition]:
    return [_query_checks(query, config) for query in project.queries]


def _check_specs(query: Query) -> list[dg.AssetCheckSpec]:
    key = query_key(query)
    names = [LAG, DEAD_LETTERS, REPLAY] if query.is_repartition else \
        [COPARTITIONED, LAG, DEAD_LETTERS, REPLAY]
    return [dg.AssetCheckSpec(name, asset=key) for name in names]


def _query_checks(query: Query, config: PlatformConfig) -> dg.AssetChecksDefinition:
    key = query_key(query)
    partitions = config.backfill_partitions()

    @dg.multi_asset_check(name=f"{query.name}_checks", specs=_check_specs(query), can_subset=True)
    def run(context: dg.AssetCheckExecutionContext, engine: EngineResource):
        client = engine.get_engine()  # no broker or Spark until a check needs them
        checks = {
            COPARTITIONED: lambda: copartitioned(client, query),
            LAG: lambda: lag_under_limit(client, query, config.max_consumer_lag),
            DEAD_LETTERS: lambda: no_dead_letters(context.instance, key),
            REPLAY: lambda: streaming_equals_batch(client, query,
                                                   partitions.get_last_partition_window()),
        }
        for check_key in context.selected_asset_check_keys:
            yield checks[check_key.name]()

    return run


def copartitioned(engine: Engine, query: Query) -> dg.AssetCheckResult:
    problems = engine.copartitioning_problems(query)
    return dg.AssetCheckResult(
        asset_key=query_key(query), check_name=COPARTITIONED, passed=not problems,
        metadata={"problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none")})


def lag_under_limit(engine: Engine, query: Query, limit: int) -> dg.AssetCheckResult:
    lag = engine.consumer_lag(query)
    return dg.AssetCheckResult(
        asset_key=query_key(query), check_name=LAG, passed=lag <= limit,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={"consumer_lag": dg.MetadataValue.int(lag), "limit": dg.MetadataValue.int(limit)})


def no_dead_letters(instance: dg.DagsterInstance, key: dg.AssetKey) -> dg.AssetCheckResult:
    metadata = latest_metadata(instance, key)
    if metadata is None:
        return dg.AssetCheckResult(asset_key=key, check_name=DEAD_LETTERS, passed=True,
                                   description="not materialized yet: nothing dead-lettered")
    dead = int(metadata.get("dead_letters", 0))
    return dg.AssetCheckResult(asset_key=key, check_name=DEAD_LETTERS, passed=dead == 0,
                               metadata={"dead_letters": dg.MetadataValue.int(dead)})


def _canonical(row: dict) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def streaming_equals_batch(engine: Engine, query: Query,
                           window: dg.TimeWindow | None) -> dg.AssetCheckResult:
    """Read the window's rows as streaming wrote them, recompute the window in batch
    (`Engine.backfill` replaces it in the table) and compare the two as multisets of rows."""
    key = query_key(query)
    if window is None:
        return dg.AssetCheckResult(asset_key=key, check_name=REPLAY, passed=True,
                                   description="no closed time window yet")
    start_ms, end_ms = (int(t.timestamp() * 1000) for t in (window.start, window.end))
    path = engine.delta_path(query)
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
                  "delta_path": dg.MetadataValue.path(path),
                  "streamed_rows": dg.MetadataValue.int(sum(streamed.values())),
                  "batch_rows": dg.MetadataValue.int(sum(replayed.values())),
                  "differences": dg.MetadataValue.md("\n".join(shown) or "none")})
