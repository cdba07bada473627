"""Sensors of the streaming jobs.

launch: a query with no healthy run gets one — a continuous query whose last run ended
  normally, an available_now query never materialised or with consumer lag (new input data).
restart: a failed run, or one whose worker process died (a killed run stays STARTED in Dagster's
  DefaultRunLauncher, so the sensor marks it failed), is relaunched from its checkpoint after
  backoff * 2**(n-1) seconds for the n-th consecutive failure, at most `restart_max_retries` times.
Both refuse to run a query whose state fingerprint differs from the one recorded at its last
materialization (an incompatible SQL change): it is flagged for `reset_<query>` + backfill.
Ticks make only quick metadata calls (run storage, consumer lag through the `engine` resource) —
no blocking polls, no Spark, no compilation: the state fingerprint is that of the `Query` the
definitions were built from.
"""

import socket
import time

import dagster as dg

from assets.factory import HOST_TAG, PID_TAG
from assets.keys import query_key, recorded_fingerprint
from jobs.streaming import (CANCELED, FAILED, IN_FLIGHT, recent_runs, reset_job_name,
                            stream_job_name, streaming_queries)
from resources import EngineResource
from resources.platform import PlatformConfig
from streamjoin.app.engine import Engine
from streamjoin.app.project import Query, SqlProject


def incompatible_change(instance: dg.DagsterInstance, query: Query) -> str | None:
    """Why the query must not run from its checkpoint, or None."""
    recorded = recorded_fingerprint(instance, query_key(query))
    current = query.state_fingerprint
    if recorded is None or recorded == current:
        return None
    return (f"{query.name}: incompatible SQL change (state fingerprint {recorded} -> {current}); "
            f"run {reset_job_name(query)} and backfill instead of restarting")


def _launch_reason(instance: dg.DagsterInstance, engine: Engine, query: Query,
                   runs: list[dg.DagsterRun]) -> str | None:
    """Why the query needs a run now, or None."""
    last = runs[0] if runs else None
    if last is not None and last.status in IN_FLIGHT + FAILED + CANCELED:
        return None  # healthy, the restart sensor's business, or stopped on purpose
    if query.mode == "continuous":
        return "no running continuous run"
    if instance.get_latest_materialization_event(query_key(query)) is None:
        return "never materialized"
    lag = engine.consumer_lag(query)
    return f"consumer lag {lag}" if lag > 0 else None


def build_launch_sensor(project: SqlProject, stream_jobs: list) -> dg.SensorDefinition:
    queries = streaming_queries(project)

    @dg.sensor(name="launch_streaming_queries", jobs=stream_jobs, minimum_interval_seconds=30)
    def launch(context: dg.SensorEvaluationContext, engine: EngineResource):
        client = engine.get_engine()  # Kafka only when a lag is needed; never Spark
        requests, notes = [], []
        for query in queries:
            runs = recent_runs(context.instance, stream_job_name(query), limit=1)
            reason = _launch_reason(context.instance, client, query, runs)
            flagged = reason and incompatible_change(context.instance, query)
            if flagged:
                context.log.warning(flagged)
                notes.append(flagged)
            elif reason:
                after = runs[0].run_id if runs else "first"
                requests.append(dg.RunRequest(run_key=f"launch:{query.name}:{after}",
                                              job_name=stream_job_name(query),
                                              tags={"streamjoin/launch_reason": reason}))
        if requests:
            return dg.SensorResult(run_requests=requests)
        return dg.SkipReason("; ".join(notes) or "every query has a healthy run and no lag")

    return launch


def _process_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def mark_dead_runs(instance: dg.DagsterInstance, runs: list[dg.DagsterRun]) -> None:
    """Report STARTED runs whose worker process (on this host) is gone as failed."""
    for run in runs:
        pid, host = run.tags.get(PID_TAG), run.tags.get(HOST_TAG)
        if (run.status == dg.DagsterRunStatus.STARTED and pid and host == socket.gethostname()
                and not _process_alive(int(pid))):
            instance.report_run_failed(run, f"run worker process {pid} died")


def _restart_request(instance: dg.DagsterInstance, query: Query,
                     config: PlatformConfig) -> dg.RunRequest | str | None:
    """A RunRequest, a reason to wait / give up, or None when the query is not failing."""
    job = stream_job_name(query)
    mark_dead_runs(instance, recent_runs(instance, job, limit=1))
    runs = recent_runs(instance, job, limit=config.restart_max_retries + 1)
    failures = 0
    for run in runs:
        if run.status not in FAILED:
            break
        failures += 1
    if failures == 0:
        return None
    if failures > config.restart_max_retries:
        return f"{query.name}: gave up after {config.restart_max_retries} restarts"
    flagged = incompatible_change(instance, query)
    if flagged:
        return flagged
    last = instance.get_run_record_by_id(runs[0].run_id)
    wait = config.restart_backoff_s * 2 ** (failures - 1)
    waited = time.time() - (last.end_time or last.update_timestamp.timestamp())
    if waited < wait:
        return f"{query.name}: restart {failures} in {wait - waited:.0f} s"
    return dg.RunRequest(run_key=f"restart:{runs[0].run_id}", job_name=job,
                         run_config=runs[0].run_config,  # same mode / stop_after_s as before
                         tags={"streamjoin/restart_of": runs[0].run_id,
                               "streamjoin/restart_attempt": str(failures)})


def build_restart_sensor(project: SqlProject, stream_jobs: list,
                         config: PlatformConfig) -> dg.SensorDefinition:
    queries = streaming_queries(project)

    @dg.sensor(name="restart_failed_queries", jobs=stream_jobs, minimum_interval_seconds=30)
    def restart(context: dg.SensorEvaluationContext):
        requests, notes = [], []
        for query in queries:
            outcome = _restart_request(context.instance, query, config)
            if isinstance(outcome, dg.RunRequest):
                requests.append(outcome)
            elif outcome:
                context.log.warning(outcome)
                notes.append(outcome)
        if requests:
            return dg.SensorResult(run_requests=requests)
        return dg.SkipReason("; ".join(notes) or "no failed streaming run")

    return restart
