"""Backfill jobs: one time-partitioned job per query; a partition's run recomputes that window in
batch (`project.backfill`) and replaces it in the query's Delta table.

The backfill sensor replays each window once it closes: the batch result must equal what
streaming wrote, so the replay is the proof rather than a change. On its first tick it only
records the latest closed window, so turning it on does not replay all history (launch a backfill
of older partitions from the UI for that).
"""

import json
from datetime import datetime, timezone

import dagster as dg

from assets.keys import delta_key, report_metadata
from resources import KafkaResource
from resources.platform import PlatformConfig
from streamjoin import project as facade
from streamjoin.project import Project, QuerySpec


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def backfill_job_name(spec: QuerySpec) -> str:
    return f"backfill_{spec.name}"


def build_backfill_jobs(project: Project, config: PlatformConfig) -> list[dg.JobDefinition]:
    partitions = config.backfill_partitions()
    return [_backfill_job(spec, partitions) for spec in project.queries]


def _backfill_job(spec: QuerySpec, partitions: dg.PartitionsDefinition) -> dg.JobDefinition:
    @dg.op(name=f"backfill_{spec.name}_window")
    def backfill_window(context: dg.OpExecutionContext, kafka: KafkaResource) -> None:
        window = context.partition_time_window
        start_ms, end_ms = int(window.start.timestamp() * 1000), int(window.end.timestamp() * 1000)
        report = facade.backfill(spec, start_ms, end_ms)
        context.log_event(dg.AssetMaterialization(
            asset_key=delta_key(spec),
            metadata=report_metadata(report) | {"window_start_ms": dg.MetadataValue.int(start_ms),
                                                "window_end_ms": dg.MetadataValue.int(end_ms),
                                                "partition": context.partition_key}))

    @dg.job(name=backfill_job_name(spec), partitions_def=partitions,
            tags={"streamjoin/query": spec.name},
            description=f"Recompute a time window of `{spec.name}` in batch into its Delta table.")
    def backfill_job():
        backfill_window()

    return backfill_job


def build_backfill_sensor(project: Project, backfill_jobs: list[dg.JobDefinition],
                          config: PlatformConfig) -> dg.SensorDefinition:
    partitions = config.backfill_partitions()

    @dg.sensor(name="backfill_closed_windows", jobs=backfill_jobs, minimum_interval_seconds=60)
    def backfill_closed(context: dg.SensorEvaluationContext):
        keys = partitions.get_partition_keys(current_time=utc_now())
        if not keys:
            return dg.SkipReason("no closed window yet")
        last_closed = keys[-1]
        done = json.loads(context.cursor) if context.cursor else {}
        requests = []
        for spec in project.queries:
            previous = done.get(spec.name)
            if previous in keys:
                requests += [dg.RunRequest(run_key=f"backfill:{spec.name}:{key}",
                                           job_name=backfill_job_name(spec), partition_key=key)
                             for key in keys[keys.index(previous) + 1:]]
            done[spec.name] = last_closed
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(done, sort_keys=True))

    return backfill_closed
