"""The `query_status` sensor on a hand-built SqlProject with a fake engine: each query's live
state (running, queued, stopping, stopped and why, failing with its error and the restart plan,
lagging, up to date, never run, needs reset, data loss, broken) as a `live_status` check
evaluation and an observation with its consumer lag; only changes are reported; the source
topics are observed with their end offsets as data version."""

import dataclasses
from dataclasses import dataclass

import dagster as dg
import pytest

from assets.keys import STOP_TAG, role_tags
from definitions import build_definitions
from resources.platform import PlatformConfig
from streamjoin.kafka.offsets import DataLoss, DataLossError, TopicPartition
from tests.platform.fixtures import changed_sql
from tests.platform.test_assets import broken_file
from tests.platform.test_sensors import add_run, tick

pytestmark = pytest.mark.platform
S = dg.DagsterRunStatus
LOST = DataLossError([DataLoss(TopicPartition("clickstream", 0), 9, 0, 3)])


@dataclass(frozen=True)
class StatusCase:
    name: str
    state: str
    verdict: str  # passed | warning | failed
    reason: str  # part of the reason shown
    materialized: bool = True
    last_run: S | None = None
    tags: dict = dataclasses.field(default_factory=dict)
    run_config: dict = dataclasses.field(default_factory=dict)
    lag: object = 0
    sql_changed: bool = False


STATES = [
    StatusCase("never run", "never run", "warning", "start_clicks_enriched", materialized=False),
    StatusCase("caught up", "up to date", "passed", "caught up by run"),
    StatusCase("new input", "lagging", "warning", "5 new records since run", lag=5),
    StatusCase("one new record", "lagging", "warning", "1 new record since run", lag=1),
    StatusCase("running", "running", "passed", "available_now", last_run=S.STARTED, lag=5),
    # start_ launched it, its step has not tagged the mode yet: the run config says it
    StatusCase("started continuously", "running", "passed", "(continuous)", last_run=S.STARTED,
               run_config={"ops": {"clicks_enriched": {"config": {"mode": "continuous"}}}}),
    StatusCase("running behind", "lagging", "warning", "records behind (limit 100)",
               last_run=S.STARTED, lag=500),
    StatusCase("waiting for a slot", "queued", "warning", "waits for a free run slot",
               last_run=S.NOT_STARTED),
    StatusCase("draining", "stopping", "warning", "drains its batch", last_run=S.STARTED,
               tags={STOP_TAG: "stop_clicks_enriched run 1234"}),
    StatusCase("stopped by stop_", "stopped", "warning", "stopped on request (stop_clicks_enriched",
               last_run=S.SUCCESS, tags={STOP_TAG: "stop_clicks_enriched run 1234"}),
    StatusCase("canceled in the UI", "stopped", "warning", "canceled from the UI",
               last_run=S.CANCELED),
    StatusCase("failing", "failing", "failed", "crashed", last_run=S.FAILURE),
    StatusCase("incompatible SQL change", "needs reset", "warning", "run reset_clicks_enriched",
               sql_changed=True),
    StatusCase("checkpoint outside the log", "data loss", "failed", "past the log end", lag=LOST),
]


def verdict(evaluation: dg.AssetCheckEvaluation) -> str:
    if evaluation.passed:
        return "passed"
    return "warning" if evaluation.severity == dg.AssetCheckSeverity.WARN else "failed"


def status_events(result, key="clicks_enriched"):
    checks = {e.asset_key.to_user_string(): e for e in result.asset_events
              if isinstance(e, dg.AssetCheckEvaluation)}
    observed = {e.asset_key.to_user_string(): e for e in result.asset_events
                if isinstance(e, dg.AssetObservation)}
    return checks.get(key), observed.get(key), observed


@pytest.mark.parametrize("case", STATES, ids=lambda c: c.name)
def test_live_state(project, engine, resources, instance, case):
    config = PlatformConfig(max_consumer_lag=100, restart_backoff_s=60)
    defs = build_definitions(project, config, resources)
    if case.materialized:
        assert defs.resolve_job_def("stream_clicks_enriched").execute_in_process(
            instance=instance).success
    if case.last_run:
        add_run(instance, case.last_run, case.tags, case.run_config)
    engine.lag = case.lag
    if case.sql_changed:
        defs = build_definitions(changed_sql(project), config, resources)
    logs = []
    check, observation, _ = status_events(tick(defs, instance, "query_status", resources,
                                               logs=logs))
    assert (observation.metadata["state"].value, verdict(check)) == (case.state, case.verdict)
    assert case.reason in check.description
    assert f"clicks_enriched: {check.description}" in logs
    if isinstance(case.lag, int) and not case.sql_changed:  # no lag asked of a stale checkpoint
        assert observation.metadata["consumer_lag"].value == case.lag
    if case.state == "failing":  # the restart sensor's plan is part of the reason
        assert "restart 1 of 5 in" in check.description


def test_only_changes_are_reported_and_sources_are_observed(project, engine, resources,
                                                            instance):
    defs = build_definitions(project, resources=resources)
    engine.offsets = {"clickstream": {0: 3, 1: 4}}
    first = tick(defs, instance, "query_status", resources)
    check, _, observed = status_events(first)
    assert check is not None
    source = observed["kafka/clickstream.topic"]
    assert (source.tags["dagster/data_version"], source.metadata["end_offsets_total"].value) == \
        ("7", 7)
    again = tick(defs, instance, "query_status", resources, cursor=first.cursor)
    assert again.asset_events == []  # nothing changed
    engine.lag, engine.offsets = 2, {"clickstream": {0: 3, 1: 6}}
    changed = tick(defs, instance, "query_status", resources, cursor=again.cursor)
    assert {e.asset_key.to_user_string() for e in changed.asset_events} >= \
        {"clicks_enriched", "products_rekeyed", "kafka/clickstream.topic"}


def test_a_broken_file_reports_its_error(project, engine, resources, instance):
    defs = build_definitions(dataclasses.replace(project, broken=(broken_file(project),)),
                             resources=resources)
    check, observation, _ = status_events(tick(defs, instance, "query_status", resources), "x")
    assert (observation.metadata["state"].value, verdict(check)) == ("broken", "failed")
    assert check.description.startswith("broken: ksqldb/x.sql:1:34: [stream-stream-window]")


def test_the_status_sensor_is_on_by_default(project):
    sensor = build_definitions(project).resolve_sensor_def("query_status")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING


def test_a_materialization_during_the_tick_waits_for_the_next(project, engine, resources,
                                                              instance, monkeypatch):
    """A state worked out before a run materialized would judge the old materialization and
    hide the run's own evaluation: the tick drops it, and the next tick reports."""
    import jobs.status

    defs = build_definitions(project, resources=resources)
    real = jobs.status.query_state

    def materialize_meanwhile(instance, engine, query, *args, **kwargs):
        state = real(instance, engine, query, *args, **kwargs)
        if query.name == "clicks_enriched" and not instance.get_latest_materialization_event(
                dg.AssetKey("clicks_enriched")):
            assert defs.resolve_job_def("stream_clicks_enriched").execute_in_process(
                instance=instance).success
        return state

    monkeypatch.setattr(jobs.status, "query_state", materialize_meanwhile)
    first = tick(defs, instance, "query_status", resources)
    check, _, _ = status_events(first)
    assert check is None and status_events(first, "products_rekeyed")[0] is not None
    check, observation, _ = status_events(tick(defs, instance, "query_status", resources,
                                               cursor=first.cursor))
    assert observation.metadata["state"].value == "up to date"


def written_by(instance, query: str, key: list[str]) -> None:
    """A materialization of `key` by a run about `query` (as a query, backfill or reset run is)."""
    @dg.asset(key=key)
    def output():
        return None

    assert dg.materialize([output], instance=instance, tags=role_tags(query, "run")).success


def test_assets_of_a_deleted_query_file_are_wiped_and_a_broken_files_kept(project, engine,
                                                                          resources, instance):
    defs = build_definitions(dataclasses.replace(project, broken=(broken_file(project),)),
                             resources=resources)
    for query, key in [("gone", ["delta", "gone.table"]), ("gone", ["gone"]),
                       ("x", ["delta", "x.table"]),  # the broken file's: kept until it is fixed
                       ("clicks_enriched", ["delta", "clicks_enriched.table"])]:  # defined
        written_by(instance, query, key)
    logs = []
    tick(defs, instance, "query_status", resources, logs=logs)
    assert {key.to_user_string() for key in instance.get_asset_keys()} >= \
        {"delta/x.table", "delta/clicks_enriched.table"}
    assert not {"delta/gone.table", "gone"} & \
        {key.to_user_string() for key in instance.get_asset_keys()}
    assert "delta/gone.table: wiped (query gone no longer defines it)" in logs
