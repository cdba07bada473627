"""Sensor ticks and scheduled jobs on a hand-built SqlProject with a fake engine: launch (new
data, never run, in flight, stopped on purpose, incompatible change), restart (killed run,
backoff with jitter, a burst spread over ticks, give up), the tick logs saying why, backfill of
closed windows, and the repartition schedule. An incompatible SQL change is what the code
location loads after the edit: definitions built from the changed project (`changed_sql`)."""

import dataclasses
import os
import socket
import subprocess
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone

import dagster as dg
import pytest

import jobs.backfill
from jobs.sensors import jitter
from assets.keys import HOST_TAG, PID_TAG, STOP_TAG, role_tags
from definitions import build_definitions
from resources.platform import PlatformConfig
from tests.platform.fixtures import changed_sql

pytestmark = pytest.mark.platform
JOB = "stream_clicks_enriched"


def utc(*fields) -> datetime:
    return datetime(*fields, tzinfo=timezone.utc)


def tick(defs, instance, sensor_name, resources, cursor=None, logs=None):
    """The tick's result; `logs` (a list) receives the tick log's lines."""
    sensor = defs.resolve_sensor_def(sensor_name)
    # The daemon loads dynamic partitions (a backfill job's windows) from the instance.
    with dg.build_sensor_context(instance=instance, definitions=defs, cursor=cursor,
                                 resources=resources) as context, \
            dg.partition_loading_context(dynamic_partitions_store=instance):  # resources set up and torn down
        if logs is not None:
            for level in ("info", "warning"):
                setattr(context.log, level, logs.append)
        return sensor.evaluate_tick(context)


CONTINUOUS = {"ops": {"clicks_enriched": {"config": {"mode": "continuous"}}}}


def add_run(instance, status, tags=None, run_config=None, query="clicks_enriched") -> dg.DagsterRun:
    """A run of the query's stream job in `status` (tagged as the asset tags the runs it runs);
    a failed or canceled one ended through the instance's events, as a real one does."""
    ends = {dg.DagsterRunStatus.FAILURE: lambda run: instance.report_run_failed(run, "crashed"),
            dg.DagsterRunStatus.CANCELED: instance.report_run_canceled}
    run = instance.add_run(dg.DagsterRun(
        job_name=f"stream_{query}", run_id=str(uuid.uuid4()),
        status=dg.DagsterRunStatus.STARTED if status in ends else status,
        tags={**role_tags(query, "run"), **(tags or {})}, run_config=run_config or {}))
    if status in ends:
        ends[status](run)
    return instance.get_run_by_id(run.run_id)


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


@dataclass(frozen=True)
class LaunchCase:
    name: str
    materialized: bool  # one successful stream run before the tick
    last_run: dg.DagsterRunStatus | None  # a run added after it (None: none)
    lag: int
    sql_changed: bool  # the tick sees the query after an incompatible edit (new fingerprint)
    launches: bool
    log: str  # what the tick log says about the query
    stop_requested: bool = False  # the last run was stopped by stop_<query>


LAUNCH = [
    LaunchCase("never materialized", False, None, 0, False, True, "run requested (never"),
    LaunchCase("up to date", True, None, 0, False, False, "no run (caught up"),
    LaunchCase("new data on a source topic", True, None, 5, False, True,
               "run requested (consumer lag 5)"),
    LaunchCase("run in flight", True, dg.DagsterRunStatus.STARTED, 5, False, False, "is started"),
    LaunchCase("not started yet", True, dg.DagsterRunStatus.NOT_STARTED, 5, False, False,
               "is not started"),
    LaunchCase("last run failed: restart's job", True, dg.DagsterRunStatus.FAILURE, 5, False,
               False, "the restart sensor's business"),
    LaunchCase("canceled: stays stopped", True, dg.DagsterRunStatus.CANCELED, 5, False, False,
               "stopped on purpose"),
    LaunchCase("stopped by stop_: stays stopped", True, dg.DagsterRunStatus.SUCCESS, 5, False,
               False, "stopped on purpose", stop_requested=True),
    LaunchCase("incompatible SQL change", True, None, 5, True, False, "incompatible SQL change"),
]


@pytest.mark.parametrize("case", LAUNCH, ids=lambda c: c.name)
def test_launch_sensor(project, engine, resources, instance, case):
    defs = build_definitions(project, resources=resources)
    if case.materialized:
        assert defs.resolve_job_def(JOB).execute_in_process(instance=instance).success
    if case.last_run:
        add_run(instance, case.last_run, {STOP_TAG: "stop_clicks_enriched"}
                if case.stop_requested else None)
    engine.lag = case.lag
    if case.sql_changed:  # the code location reloaded the edited file
        defs = build_definitions(changed_sql(project), resources=resources)
    logs = []
    result = tick(defs, instance, "launch_streaming_queries", resources, logs=logs)
    assert [r.job_name for r in result.run_requests] == ([JOB] if case.launches else [])
    [line] = [line for line in logs if line.startswith("clicks_enriched:")]
    assert case.log in line
    if case.sql_changed:
        assert "reset_clicks_enriched" in result.skip_message


def test_launch_after_reset_observation(project, engine, resources, instance):
    """The reset job records the new fingerprint, which unblocks launching."""
    defs = build_definitions(project, resources=resources)
    assert defs.resolve_job_def(JOB).execute_in_process(instance=instance).success
    engine.lag = 5
    defs = build_definitions(changed_sql(project), resources=resources)
    assert not tick(defs, instance, "launch_streaming_queries", resources).run_requests
    reset = defs.resolve_job_def("reset_clicks_enriched")
    assert reset.execute_in_process(instance=instance).success
    assert ("reset", "clicks_enriched") in engine.calls
    assert [r.job_name for r in
            tick(defs, instance, "launch_streaming_queries", resources).run_requests] == [JOB]


@dataclass(frozen=True)
class RestartCase:
    name: str
    failures: int  # consecutive failed runs, newest last
    killed: bool  # the newest run is STARTED but its worker process is dead
    config: PlatformConfig = field(default_factory=lambda: PlatformConfig(restart_backoff_s=0))
    sql_changed: bool = False
    restarts: bool = True
    note: str = ""


RESTART = [
    RestartCase("killed run", 0, True),
    RestartCase("failed run", 1, False),
    RestartCase("third failure waits for 4x backoff", 3, False,
                PlatformConfig(restart_backoff_s=60), restarts=False, note="restart 3 of 5 in"),
    RestartCase("gives up after max retries", 3, False,
                PlatformConfig(restart_backoff_s=0, restart_max_retries=2), restarts=False,
                note="gave up after 2"),
    RestartCase("incompatible change is flagged", 1, False, sql_changed=True,
                restarts=False, note="incompatible SQL change"),
]


@pytest.mark.parametrize("case", RESTART, ids=lambda c: c.name)
def test_restart_sensor(project, engine, resources, instance, case):
    defs = build_definitions(project, case.config, resources)
    assert defs.resolve_job_def(JOB).execute_in_process(instance=instance).success  # records fp
    failed = [add_run(instance, dg.DagsterRunStatus.FAILURE) for _ in range(case.failures)]
    if case.killed:
        failed.append(add_run(instance, dg.DagsterRunStatus.STARTED,
                              {PID_TAG: str(dead_pid()), HOST_TAG: socket.gethostname()},
                              run_config=CONTINUOUS))
    if case.sql_changed:
        defs = build_definitions(changed_sql(project), case.config, resources)
    result = tick(defs, instance, "restart_failed_queries", resources)
    if case.killed:
        assert instance.get_run_by_id(failed[-1].run_id).status == dg.DagsterRunStatus.FAILURE
    if case.restarts:
        [request] = result.run_requests
        assert request.tags["streamjoin/restart_of"] == failed[-1].run_id
        assert request.run_config == failed[-1].run_config  # relaunched in the same mode
    else:
        assert not result.run_requests and case.note in result.skip_message


def test_backoff_has_jitter_and_says_what_remains(project, engine, resources, instance):
    """Wait before restart n: backoff * 2**(n-1) * (1 + jitter), jitter in [0, 0.5) fixed per
    failed run; the tick log says how long is left."""
    defs = build_definitions(project, PlatformConfig(restart_backoff_s=100), resources)
    failed = add_run(instance, dg.DagsterRunStatus.FAILURE)
    logs = []
    assert not tick(defs, instance, "restart_failed_queries", resources, logs=logs).run_requests
    [line] = [line for line in logs if line.startswith("clicks_enriched:")]
    remaining = int(line.split(" in ")[1].split(" s")[0])
    expected = 100 * (1 + jitter(failed.run_id))
    assert expected - 5 <= remaining <= expected + 1 and 0 <= jitter(failed.run_id) < 0.5
    assert len({jitter(str(uuid.uuid4())) for _ in range(20)}) == 20


def test_a_burst_of_failures_restarts_one_per_tick(project, engine, resources, instance):
    second = dataclasses.replace(project.query("clicks_enriched"), name="clicks_enriched_2",
                                 output_topic="clicks_enriched_2", repartition_topics=(),
                                 repartition_inputs=())
    project = dataclasses.replace(project, queries=(*project.queries, second))
    defs = build_definitions(project, PlatformConfig(restart_backoff_s=0, restarts_per_tick=1),
                             resources)
    for query in ("clicks_enriched", "clicks_enriched_2"):
        add_run(instance, dg.DagsterRunStatus.FAILURE, query=query)
    logs = []
    [request] = tick(defs, instance, "restart_failed_queries", resources, logs=logs).run_requests
    assert request.job_name == "stream_clicks_enriched"
    assert "clicks_enriched_2: restart due, next tick (1 per tick)" in logs


def test_restart_leaves_a_live_run_alone(project, engine, resources, instance):
    defs = build_definitions(project, PlatformConfig(restart_backoff_s=0), resources)
    live = add_run(instance, dg.DagsterRunStatus.STARTED,
                   {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()})
    assert not tick(defs, instance, "restart_failed_queries", resources).run_requests
    assert instance.get_run_by_id(live.run_id).status == dg.DagsterRunStatus.STARTED


def test_backfill_sensor_replays_windows_as_they_close(project, engine, resources, instance,
                                                       monkeypatch):
    """Windows holding data (the query's partitions) are replayed once they have closed; the
    first tick only records where it stands."""
    defs = build_definitions(project, PlatformConfig(backfill_granularity="daily"), resources)
    for query in ("clicks_enriched", "products_rekeyed"):
        instance.add_dynamic_partitions(f"windows_{query}", ["2026-11-19", "2026-11-20", "2026-11-21"])
    monkeypatch.setattr(jobs.backfill, "utc_now", lambda: utc(2026, 11, 20, 10))
    first = tick(defs, instance, "backfill_closed_windows", resources)
    assert not first.run_requests  # turning the sensor on does not replay history
    monkeypatch.setattr(jobs.backfill, "utc_now", lambda: utc(2026, 11, 22, 1))
    second = tick(defs, instance, "backfill_closed_windows", resources, cursor=first.cursor)
    assert sorted((r.job_name, r.partition_key) for r in second.run_requests) == [
        ("backfill_clicks_enriched", "2026-11-20"), ("backfill_clicks_enriched", "2026-11-21"),
        ("backfill_products_rekeyed", "2026-11-20"), ("backfill_products_rekeyed", "2026-11-21")]
    third = tick(defs, instance, "backfill_closed_windows", resources, cursor=second.cursor)
    assert not third.run_requests  # each once
    run = defs.resolve_job_def("backfill_clicks_enriched").execute_in_process(
        instance=instance, partition_key="2026-11-20")
    assert run.success
    day_ms = int(utc(2026, 11, 20).timestamp() * 1000)
    assert ("backfill", "clicks_enriched", day_ms, day_ms + 86_400_000) in engine.calls
    delta = instance.get_latest_materialization_event(
        dg.AssetKey(["delta", "clicks_enriched.table"]))
    assert delta.asset_materialization.metadata["partition"].value == "2026-11-20"


def test_repartition_schedule_runs_its_job(project, engine, resources, instance):
    defs = build_definitions(project, resources=resources)
    schedule = defs.resolve_schedule_def("repartition_products_rekeyed_schedule")
    assert schedule.cron_schedule == "*/5 * * * *"  # the query's `-- schedule:` header
    context = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=utc(2026, 11, 22, 12, 5))
    [request] = schedule.evaluate_tick(context).run_requests
    job = defs.resolve_job_def(schedule.job_name)
    assert job.execute_in_process(instance=instance, tags=request.tags).success
    assert [call for call in engine.calls if call[0] == "run"] == \
        [("run", "products_rekeyed", "available_now")]
    assert instance.get_latest_materialization_event(
        dg.AssetKey(["kafka", "products_rekeyed.topic"]))
