"""Asset checks on each query asset: its join inputs are co-partitioned, its consumer lag is under
the configured limit, its last run dead-lettered nothing, and the last closed time window reads the
same from the streamed Delta table as from a batch recomputation."""

import json
from collections import Counter

import dagster as dg

from assets.keys import latest_metadata, query_key
from resources import DeltaResource, KafkaResource
from resources.platform import PlatformConfig
from streamjoin import project as facade
from streamjoin.project import Project, QuerySpec

COPARTITIONED, LAG, DEAD_LETTERS = "copartitioned", "consumer_lag_under_limit", "no_dead_letters"
REPLAY = "streaming_equals_batch"
SHOWN_DIFFERENCES = 5


def build_checks(project: Project, config: PlatformConfig) -> list[dg.AssetChecksDefinition]:
    return [_query_checks(spec, config) for spec in project.queries]


def _check_specs(spec: QuerySpec) -> list[dg.AssetCheckSpec]:
    key = query_key(spec)
    names = [LAG, DEAD_LETTERS, REPLAY] if spec.is_repartition else \
        [COPARTITIONED, LAG, DEAD_LETTERS, REPLAY]
    return [dg.AssetCheckSpec(name, asset=key) for name in names]


def _query_checks(spec: QuerySpec, config: PlatformConfig) -> dg.AssetChecksDefinition:
    key = query_key(spec)
    partitions = config.backfill_partitions()

    @dg.multi_asset_check(name=f"{spec.name}_checks", specs=_check_specs(spec), can_subset=True)
    def run(context: dg.AssetCheckExecutionContext, kafka: KafkaResource, delta: DeltaResource):
        # kafka is taken so the engine sees its bootstrap/security settings.
        checks = {
            COPARTITIONED: lambda: copartitioned(spec),
            LAG: lambda: lag_under_limit(spec, config.max_consumer_lag),
            DEAD_LETTERS: lambda: no_dead_letters(context.instance, key),
            REPLAY: lambda: streaming_equals_batch(spec, delta,
                                                   partitions.get_last_partition_window()),
        }
        for check_key in context.selected_asset_check_keys:
            yield checks[check_key.name]()

    return run


def copartitioned(spec: QuerySpec) -> dg.AssetCheckResult:
    problems = facade.copartitioning_problems(spec)
    return dg.AssetCheckResult(
        asset_key=query_key(spec), check_name=COPARTITIONED, passed=not problems,
        metadata={"problems": dg.MetadataValue.md("\n".join(f"- {p}" for p in problems) or "none")})


def lag_under_limit(spec: QuerySpec, limit: int) -> dg.AssetCheckResult:
    lag = facade.consumer_lag(spec)
    return dg.AssetCheckResult(
        asset_key=query_key(spec), check_name=LAG, passed=lag <= limit,
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


def streaming_equals_batch(spec: QuerySpec, delta: DeltaResource,
                           window: dg.TimeWindow | None) -> dg.AssetCheckResult:
    """Read the window's rows as streaming wrote them, recompute the window in batch
    (`project.backfill` replaces it in the table) and compare the two as multisets of rows."""
    key = query_key(spec)
    if window is None:
        return dg.AssetCheckResult(asset_key=key, check_name=REPLAY, passed=True,
                                   description="no closed time window yet")
    start_ms, end_ms = (int(t.timestamp() * 1000) for t in (window.start, window.end))
    streamed = Counter(map(_canonical, delta.rows_between(spec.delta_path, start_ms, end_ms)))
    try:
        facade.backfill(spec, start_ms, end_ms)
    except NotImplementedError as error:  # an engine limit, not a wrong result: warn only
        return dg.AssetCheckResult(asset_key=key, check_name=REPLAY, passed=False,
                                   severity=dg.AssetCheckSeverity.WARN,
                                   description=f"cannot replay in batch: {error}")
    replayed = Counter(map(_canonical, delta.rows_between(spec.delta_path, start_ms, end_ms)))
    only_streamed, only_batch = streamed - replayed, replayed - streamed
    shown = [f"- streaming only: {row}" for row in list(only_streamed)[:SHOWN_DIFFERENCES]] + \
            [f"- batch only: {row}" for row in list(only_batch)[:SHOWN_DIFFERENCES]]
    return dg.AssetCheckResult(
        asset_key=key, check_name=REPLAY, passed=not only_streamed and not only_batch,
        metadata={"window_start_ms": dg.MetadataValue.int(start_ms),
                  "window_end_ms": dg.MetadataValue.int(end_ms),
                  "streamed_rows": dg.MetadataValue.int(sum(streamed.values())),
                  "batch_rows": dg.MetadataValue.int(sum(replayed.values())),
                  "differences": dg.MetadataValue.md("\n".join(shown) or "none")})
