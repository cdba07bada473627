"""Backfill jobs: one partitioned job per query; a partition is a time window (hourly or daily,
STREAMJOIN_BACKFILL_GRANULARITY) that holds input data, and its run recomputes that window in
batch (`Engine.backfill` of the `engine` resource) and replaces it in the query's Delta table.

The partitions are the windows the query's source topics hold records in (a dynamic partitions
definition per query, `windows_<query>`): the `query_status` sensor scans new records each tick
(`streamjoin.app.windows`) and adds the windows it finds (none before STREAMJOIN_BACKFILL_START).
So the partitions page lists exactly the windows with data — the samples' two days, not 20,786
days since 1970. The backfill sensor replays each such window once it has closed: the batch
result must equal what streaming wrote, so the replay is the proof rather than a change. On its
first tick it only records where it stands, so turning it on does not replay all history.
"""

import json
from datetime import datetime, timezone

import dagster as dg

from assets.factory import SPARK_POOL
from assets import preview
from assets.keys import delta_key, role_tags
from resources import EngineResource
from resources.platform import PlatformConfig
from streamjoin.app.project import Query, SqlProject


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def backfill_job_name(query: Query) -> str:
    return f"backfill_{query.name}"


def build_backfill_jobs(project: SqlProject, config: PlatformConfig) -> list[dg.JobDefinition]:
    return [_backfill_job(query, config) for query in project.queries]


def _backfill_job(query: Query, config: PlatformConfig) -> dg.JobDefinition:
    @dg.op(name=f"backfill_{query.name}_window", pool=SPARK_POOL)
    def backfill_window(context: dg.OpExecutionContext, engine: EngineResource) -> None:
        start_ms, end_ms = config.window_of(context.partition_key)
        report = engine.get_engine().backfill(query, start_ms, end_ms)
        context.log_event(dg.AssetMaterialization(
            asset_key=delta_key(query), metadata=backfill_metadata(report) | {
                "window_start_ms": dg.MetadataValue.int(start_ms),
                "window_end_ms": dg.MetadataValue.int(end_ms),
                "partition": context.partition_key}))

    @dg.job(name=backfill_job_name(query), partitions_def=config.backfill_partitions(query.name),
            tags=role_tags(query.name, "backfill"),
            description=f"Recompute a time window of `{query.name}` in batch into its Delta table. "
                        f"The partitions are the {config.backfill_granularity} windows its input "
                        "topics hold records in (added by the query_status sensor as data arrives).")
    def backfill_job():
        backfill_window()

    return backfill_job


def backfill_metadata(report) -> dict:
    """What a backfill knows: the rows it wrote, the table's version and path, and its newest rows
    (the preview a streaming run records; without it the table's page lost its preview). The
    streaming figures (input rows, rates, batches, lag) are a run's, not a batch recompute's:
    left out, as zeros they read as a stalled query on the table's plots."""
    metadata = {"output_rows": dg.MetadataValue.int(report.output_rows),
                "path": dg.MetadataValue.path(report.delta_path),
                "latest_rows": preview.metadata_or_note(
                    lambda: preview.table_tail(report.delta_path, "__ts"))}
    if report.delta_version is not None:
        metadata["delta_version"] = dg.MetadataValue.int(report.delta_version)
    return metadata


def closed_windows(instance: dg.DagsterInstance, query: Query, config: PlatformConfig,
                   now: datetime) -> list[str]:
    """The query's partitions (windows holding data) that have ended by `now`, oldest first."""
    keys = instance.get_dynamic_partitions(config.backfill_partitions(query.name).name)
    return sorted(k for k in keys if config.window_of(k)[1] <= now.timestamp() * 1000)


def build_backfill_sensor(project: SqlProject, backfill_jobs: list[dg.JobDefinition],
                          config: PlatformConfig) -> dg.SensorDefinition:
    @dg.sensor(name="backfill_closed_windows", jobs=backfill_jobs, minimum_interval_seconds=60,
               description="Replays each window holding data in batch once it closes (the first "
                           "tick only records where it stands).")
    def backfill_closed(context: dg.SensorEvaluationContext):
        done = json.loads(context.cursor) if context.cursor else {}
        requests = []
        for query in project.queries:
            closed = closed_windows(context.instance, query, config, utc_now())
            previous = done.get(query.name)
            new = [key for key in closed if previous is not None and key > previous]
            requests += [dg.RunRequest(run_key=f"backfill:{query.name}:{key}",
                                       job_name=backfill_job_name(query), partition_key=key)
                         for key in new]
            if closed:
                done[query.name] = max(closed[-1], previous or "")
            elif previous is None:
                done[query.name] = ""  # from now on every window that closes is replayed
            context.log.info(f"{query.name}: {len(new)} window(s) to replay; closed up to "
                             f"{done[query.name] or 'none yet'}")
        if not requests:
            return dg.SensorResult(skip_reason="no window closed since the last tick",
                                   cursor=json.dumps(done, sort_keys=True))
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(done, sort_keys=True))

    return backfill_closed
