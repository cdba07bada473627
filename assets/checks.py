"""Asset checks on each query asset: its join inputs are co-partitioned, its consumer lag is under
the configured limit, and its last run dead-lettered nothing."""

import dagster as dg

from assets.keys import latest_metadata, query_key
from resources import KafkaResource
from resources.platform import PlatformConfig
from streamjoin import project as facade
from streamjoin.project import Project, QuerySpec

COPARTITIONED, LAG, DEAD_LETTERS = "copartitioned", "consumer_lag_under_limit", "no_dead_letters"


def build_checks(project: Project, config: PlatformConfig) -> list[dg.AssetChecksDefinition]:
    return [_query_checks(spec, config) for spec in project.queries]


def _check_specs(spec: QuerySpec) -> list[dg.AssetCheckSpec]:
    key = query_key(spec)
    names = [LAG, DEAD_LETTERS] if spec.is_repartition else [COPARTITIONED, LAG, DEAD_LETTERS]
    return [dg.AssetCheckSpec(name, asset=key) for name in names]


def _query_checks(spec: QuerySpec, config: PlatformConfig) -> dg.AssetChecksDefinition:
    key = query_key(spec)
    checks = {
        COPARTITIONED: lambda context: copartitioned(spec),
        LAG: lambda context: lag_under_limit(spec, config.max_consumer_lag),
        DEAD_LETTERS: lambda context: no_dead_letters(context.instance, key),
    }

    @dg.multi_asset_check(name=f"{spec.name}_checks", specs=_check_specs(spec), can_subset=True)
    def run(context: dg.AssetCheckExecutionContext, kafka: KafkaResource):
        # kafka is taken so the engine sees its bootstrap/security settings.
        for check_key in context.selected_asset_check_keys:
            yield checks[check_key.name](context)

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
