"""Sensors of the streaming jobs. Each tick logs, per query, why a run was or was not requested.

launch: a query with no healthy run gets one — a continuous query whose last run ended by
  itself, an available_now query never materialised or with consumer lag (new input data). A
  query stopped on purpose (stop_<query>, or its run canceled) stays stopped.
restart: a failed run, or one whose worker process died (a killed run stays STARTED in Dagster's
  DefaultRunLauncher, so the sensor marks it failed), is relaunched from its checkpoint after
  backoff * 2**(n-1) seconds (plus up to 50 % jitter, fixed per run, so failures that came
  together do not retry together) for the n-th consecutive failure, at most `restart_max_retries`
  times and at most `restarts_per_tick` per tick.
Runs requested go through the instance's run queue (dagster.yaml: at most N at once). Both
sensors refuse to run a query whose state fingerprint differs from the one recorded at its last
materialization (an incompatible SQL change): it is flagged for `reset_<query>` + backfill.
Ticks make only quick metadata calls (run storage, consumer lag) — no Spark, no compilation.
"""

import dataclasses
import hashlib
import socket
import time

import dagster as dg

from assets.keys import HOST_TAG, PID_TAG, STOP_TAG, query_key, query_runs
from assets.state import IN_FLIGHT, incompatible_change
from jobs.streaming import (FAILED, start_job_name, stream_job_name, streaming_queries)
from resources import EngineResource
from resources.platform import PlatformConfig
from streamjoin.app.engine import Engine
from streamjoin.app.project import Query, SqlProject

CANCELED = (dg.DagsterRunStatus.CANCELED, dg.DagsterRunStatus.CANCELING)


def _launch_reason(instance: dg.DagsterInstance, engine: Engine, query: Query,
                   runs: list[dg.DagsterRun]) -> tuple[str | None, str]:
    """(why the query needs a run now, or None; why not)."""
    last = runs[0] if runs else None
    if last is not None:
        if last.status in IN_FLIGHT:
            return None, f"run {last.run_id[:8]} is {last.status.value.lower().replace('_', ' ')}"
        if last.status in FAILED:
            return None, f"run {last.run_id[:8]} failed: the restart sensor's business"
        if last.status in CANCELED or last.tags.get(STOP_TAG):
            return None, f"stopped on purpose (run {last.run_id[:8]}): start_{query.name} resumes"
    if query.mode == "continuous":
        return "no running continuous run", ""
    if instance.get_latest_materialization_event(query_key(query)) is None:
        return "never materialized", ""
    lag = engine.consumer_lag(query)
    return (f"consumer lag {lag}", "") if lag > 0 else (None, "caught up (lag 0)")


def build_launch_sensor(project: SqlProject, jobs: list) -> dg.SensorDefinition:
    queries = streaming_queries(project)

    @dg.sensor(name="launch_streaming_queries", jobs=jobs, minimum_interval_seconds=30,
               description="Runs each query that needs it: never run, new input (consumer lag), "
                           "or a continuous query without a run. Runs queue (dagster.yaml).")
    def launch(context: dg.SensorEvaluationContext, engine: EngineResource):
        client = engine.get_engine()  # Kafka only when a lag is needed; never Spark
        requests, notes = [], []
        for query in queries:
            runs = query_runs(context.instance, query.name, limit=1)
            reason, why_not = _launch_reason(context.instance, client, query, runs)
            flagged = reason and incompatible_change(context.instance, query)
            if reason and not flagged:
                after = runs[0].run_id if runs else "first"
                requests.append(dg.RunRequest(run_key=f"launch:{query.name}:{after}",
                                              job_name=stream_job_name(query),
                                              tags={"streamjoin/launch_reason": reason}))
                context.log.info(f"{query.name}: run requested ({reason})")
            else:
                context.log.info(f"{query.name}: no run ({flagged or why_not})")
                if flagged:
                    notes.append(f"{query.name}: {flagged}")
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


def jitter(run_id: str) -> float:
    """A fraction in [0, 0.5), fixed per run: spreads retries of failures that came together."""
    return int(hashlib.sha256(run_id.encode()).hexdigest()[:8], 16) / 0x100000000 / 2


@dataclasses.dataclass(frozen=True)
class RestartPlan:
    """What the restart sensor does about a query: relaunch it (`request`), or not yet or no
    more (`note`: the backoff remaining, a needed reset, giving up); neither when it is not failing."""

    request: dg.RunRequest | None = None
    note: str = ""


def restart_plan(instance: dg.DagsterInstance, query: Query, config: PlatformConfig) -> RestartPlan:
    """Whether and when a failing query's run is relaunched."""
    mark_dead_runs(instance, query_runs(instance, query.name, limit=1))
    runs = query_runs(instance, query.name, limit=config.restart_max_retries + 1)
    failures = 0
    for run in runs:
        if run.status not in FAILED:
            break
        failures += 1
    if failures == 0:
        return RestartPlan()
    if failures > config.restart_max_retries:
        return RestartPlan(note=f"gave up after {config.restart_max_retries} restarts")
    flagged = incompatible_change(instance, query)
    if flagged:
        return RestartPlan(note=flagged)
    last = instance.get_run_record_by_id(runs[0].run_id)
    wait = config.restart_backoff_s * 2 ** (failures - 1) * (1 + jitter(runs[0].run_id))
    waited = time.time() - (last.end_time or last.update_timestamp.timestamp())
    if waited < wait:
        return RestartPlan(note=f"restart {failures} of {config.restart_max_retries} in {wait - waited:.0f} s")
    # The failed run's job when it is ours (a continuous start_ run restarts continuously), its
    # run config (mode, stop_after_s) either way.
    job = runs[0].job_name if runs[0].job_name == start_job_name(query) else stream_job_name(query)
    return RestartPlan(dg.RunRequest(run_key=f"restart:{runs[0].run_id}", job_name=job,
                                     run_config=runs[0].run_config,
                                     tags={"streamjoin/restart_of": runs[0].run_id,
                                           "streamjoin/restart_attempt": str(failures)}))


def build_restart_sensor(project: SqlProject, jobs: list,
                         config: PlatformConfig) -> dg.SensorDefinition:
    queries = streaming_queries(project)

    @dg.sensor(name="restart_failed_queries", jobs=jobs, minimum_interval_seconds=30,
               description="Relaunches failed runs after an exponential backoff with jitter, "
                           f"at most {config.restarts_per_tick} per tick.")
    def restart(context: dg.SensorEvaluationContext):
        requests, notes = [], []
        for query in queries:
            plan = restart_plan(context.instance, query, config)
            if plan.request is not None and len(requests) < config.restarts_per_tick:
                requests.append(plan.request)
                context.log.info(f"{query.name}: restart requested (attempt "
                                 f"{plan.request.tags['streamjoin/restart_attempt']})")
            elif plan.request is not None:
                context.log.info(f"{query.name}: restart due, next tick "
                                 f"({config.restarts_per_tick} per tick)")
            else:
                context.log.info(f"{query.name}: no restart ({plan.note or 'not failing'})")
                if plan.note:
                    notes.append(f"{query.name}: {plan.note}")
        if requests:
            return dg.SensorResult(run_requests=requests)
        return dg.SkipReason("; ".join(notes) or "no failed streaming run")

    return restart
