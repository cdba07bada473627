"""Streaming jobs, per (non-repartition) query: `stream_<query>` materialises it in its own mode,
`start_<query>` runs it continuously (one click: the mode is preset), `stop_<query>` has the
running run drain its batch and stop, `reset_<query>` deletes its checkpoint after an
incompatible SQL change. Every materializing job selects the query's checks with it, so they run
after each materialization, however it was launched."""

import time

import dagster as dg

from assets.factory import QueryAssets
from assets.keys import (FINGERPRINT, FINGERPRINT_TAG, STOP_TAG, mode_run_config, query_key, query_runs,
                         role_tags)
from assets.state import IN_FLIGHT, WAITING
from resources import EngineResource
from streamjoin.app.project import Query, SqlProject

FAILED = (dg.DagsterRunStatus.FAILURE,)  # restarted by the restart sensor
STOP_GRACE_S = 30.0  # after the drain timeout: the run's final writes, then it is terminated


def stream_job_name(query: Query) -> str:
    return f"stream_{query.name}"


def start_job_name(query: Query) -> str:
    return f"start_{query.name}"


def stop_job_name(query: Query) -> str:
    return f"stop_{query.name}"


def reset_job_name(query: Query) -> str:
    return f"reset_{query.name}"


def streaming_queries(project: SqlProject) -> list[Query]:
    """Queries run by the launch/restart sensors (PARTITION BY queries run on a schedule)."""
    return [q for q in project.queries if not q.is_repartition]


def query_job(name: str, query: Query, assets: QueryAssets, mode: str = "", description=None):
    """An asset job materialising the query's multi-asset and running its checks; `mode`
    presets the run config."""
    config = mode_run_config(query, mode) if mode else None
    return dg.define_asset_job(name, selection=dg.AssetSelection.assets(assets.queries[query.name]),
                               tags=role_tags(query.name, "run"), config=config,
                               description=description)


def build_stream_jobs(project: SqlProject, assets: QueryAssets) -> list:
    return [query_job(stream_job_name(q), q, assets,
                      description=f"Run `{q.name}` in its mode ({q.mode}), then its checks.")
            for q in streaming_queries(project)]


def build_start_jobs(project: SqlProject, assets: QueryAssets) -> list:
    return [query_job(start_job_name(q), q, assets, mode="continuous",
                      description=f"Start `{q.name}` continuously (stop_{q.name} stops it).")
            for q in streaming_queries(project)]


def build_stop_jobs(project: SqlProject) -> list[dg.JobDefinition]:
    return [_stop_job(query) for query in streaming_queries(project)]


def build_reset_jobs(project: SqlProject) -> list[dg.JobDefinition]:
    return [_reset_job(query) for query in project.queries]


class StopConfig(dg.Config):
    drain_timeout_s: float = 120.0  # a batch still running after this long is interrupted


def _finished(instance: dg.DagsterInstance, run_id: str, key: dg.AssetKey) -> bool:
    """The run's query step has ended: it materialised the query, or the run is over."""
    event = instance.get_latest_materialization_event(key)
    return (event is not None and event.run_id == run_id) or \
        instance.get_run_by_id(run_id).status not in IN_FLIGHT + (dg.DagsterRunStatus.CANCELING,)


def stop_runs(context: dg.OpExecutionContext, query: Query, timeout_s: float) -> list[str]:
    """Cancel the query's queued runs; have each running one drain its batch and stop (waiting
    for it, terminating it after `timeout_s`). Returns what happened, one line per run."""
    instance, key, notes = context.instance, query_key(query), []
    for run in query_runs(instance, query.name, limit=10):
        if run.status in WAITING:  # not started yet: a stop cancels it outright
            instance.run_coordinator.cancel_run(run.run_id)
            notes.append(f"run {run.run_id[:8]} was queued: canceled")
        elif run.status == dg.DagsterRunStatus.STARTED:
            instance.add_run_tags(run.run_id, {STOP_TAG: f"{context.job_name} run {context.run_id[:8]}"})
            deadline = time.monotonic() + timeout_s + STOP_GRACE_S
            while not _finished(instance, run.run_id, key) and time.monotonic() < deadline:
                time.sleep(1.0)
            if not _finished(instance, run.run_id, key):
                instance.run_coordinator.cancel_run(run.run_id)
                notes.append(f"run {run.run_id[:8]} did not stop in {timeout_s:.0f} s: terminated")
                continue
            event = instance.get_latest_materialization_event(key)
            if event is None or event.run_id != run.run_id:  # it failed rather than stopped
                status = instance.get_run_by_id(run.run_id).status.value.lower()
                notes.append(f"run {run.run_id[:8]} ended ({status}) without recording a stop")
                continue
            stopped = event.asset_materialization.metadata
            if "stopped_at_offsets" not in stopped:
                notes.append(f"run {run.run_id[:8]} finished before the stop took effect")
                continue
            notes.append(f"run {run.run_id[:8]} stopped after batch "
                         f"{stopped['stopped_after_batch'].value} at offsets "
                         f"{stopped['stopped_at_offsets'].value}")
    return notes or ["no queued or running run: nothing to stop"]


def _stop_job(query: Query) -> dg.JobDefinition:
    @dg.op(name=f"stop_{query.name}_runs")
    def stop(context: dg.OpExecutionContext, config: StopConfig) -> None:
        for note in stop_runs(context, query, config.drain_timeout_s):
            context.log.info(f"{query.name}: {note}")

    @dg.job(name=stop_job_name(query), tags=role_tags(query.name, "stop"),
            description=f"Stop `{query.name}`: its running run drains the current batch, records "
                        "the offsets it stopped at and ends; queued runs are canceled.")
    def stop_job():
        stop()

    return stop_job


def _reset_job(query: Query) -> dg.JobDefinition:
    @dg.op(name=f"reset_{query.name}_checkpoint")
    def reset_checkpoint(context: dg.OpExecutionContext, engine: EngineResource) -> None:
        """Delete the checkpoint; the run's FINGERPRINT_TAG then re-enables the launch and
        restart sensors (they refuse to run on an incompatible checkpoint)."""
        engine.get_engine().reset(query)
        context.log_event(dg.AssetObservation(
            asset_key=query_key(query),
            metadata={FINGERPRINT: query.state_fingerprint, "reset": True}))

    @dg.job(name=reset_job_name(query),
            tags={**role_tags(query.name, "reset"), FINGERPRINT_TAG: query.state_fingerprint},
            description=f"Delete the checkpoint of `{query.name}`; then backfill its history.")
    def reset_job():
        reset_checkpoint()

    return reset_job
