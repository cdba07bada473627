"""Backfill jobs: one time-partitioned job per query; a partition's run recomputes that window in
batch (`Engine.backfill` of the `engine` resource) and replaces it in the query's Delta table.

The partitions run from STREAMJOIN_BACKFILL_START (default 1970-01-01: any event time, the
samples' too) to today's window, which is offered though still open. The backfill sensor replays
each window once it closes: the batch result must equal what streaming wrote, so the replay is
the proof rather than a change. On its first tick it only records the latest closed window, so
turning it on does not replay all history (launch a backfill of older partitions from the UI).
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
    partitions = config.backfill_partitions()
    return [_backfill_job(query, partitions) for query in project.queries]


def _backfill_job(query: Query, partitions: dg.PartitionsDefinition) -> dg.JobDefinition:
    @dg.op(name=f"backfill_{query.name}_window", pool=SPARK_POOL)
    def backfill_window(context: dg.OpExecutionContext, engine: EngineResource) -> None:
        window = context.partition_time_window
        start_ms, end_ms = int(window.start.timestamp() * 1000), int(window.end.timestamp() * 1000)
        report = engine.get_engine().backfill(query, start_ms, end_ms)
        context.log_event(dg.AssetMaterialization(
            asset_key=delta_key(query), metadata=backfill_metadata(report) | {
                "window_start_ms": dg.MetadataValue.int(start_ms),
                "window_end_ms": dg.MetadataValue.int(end_ms),
                "partition": context.partition_key}))

    @dg.job(name=backfill_job_name(query), partitions_def=partitions,
            tags=role_tags(query.name, "backfill"),
            description=f"Recompute a time window of `{query.name}` in batch into its Delta table.")
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


def last_closed_key(closed: dg.TimeWindowPartitionsDefinition, now: datetime) -> str | None:
    """The key of the latest window that ended by `now` (None: none did since the start)."""
    current = closed.time_window_for_partition_key(closed.get_partition_key_for_timestamp(now.timestamp()))
    previous = closed.get_prev_partition_window(current.start)
    return None if previous is None else \
        closed.get_partition_key_for_timestamp(previous.start.timestamp())


def build_backfill_sensor(project: SqlProject, backfill_jobs: list[dg.JobDefinition],
                          config: PlatformConfig) -> dg.SensorDefinition:
    closed = config.closed_partitions()

    @dg.sensor(name="backfill_closed_windows", jobs=backfill_jobs, minimum_interval_seconds=60,
               description="Replays each backfill window in batch once it closes (the first tick "
                           "only records where it stands).")
    def backfill_closed(context: dg.SensorEvaluationContext):
        last_closed = last_closed_key(closed, utc_now())
        if last_closed is None:
            return dg.SkipReason("no closed window yet")
        done = json.loads(context.cursor) if context.cursor else {}
        requests = []
        for query in project.queries:
            previous = done.get(query.name)
            if previous is not None and closed.less_than(previous, last_closed):
                keys = closed.get_partition_keys_in_range(
                    dg.PartitionKeyRange(previous, last_closed))[1:]
                requests += [dg.RunRequest(run_key=f"backfill:{query.name}:{key}",
                                           job_name=backfill_job_name(query), partition_key=key)
                             for key in keys]
            done[query.name] = last_closed
            context.log.info(f"{query.name}: {len(requests)} window(s) to replay so far; "
                             f"closed up to {last_closed}")
        return dg.SensorResult(run_requests=requests, cursor=json.dumps(done, sort_keys=True))

    return backfill_closed
