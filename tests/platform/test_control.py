"""Start and stop on a hand-built SqlProject with a fake engine: `start_<query>` runs it
continuously (the mode is preset: one click in the UI); `stop_<query>` has the running run drain
its batch and stop, which records the offsets it stopped at; a stopped query then stays stopped
(the launch sensor leaves it alone, the status says why)."""

import threading
import time

import dagster as dg
import pytest

from assets.keys import QUERY_TAG
from definitions import build_definitions
from tests.platform.test_sensors import tick

pytestmark = pytest.mark.platform
TIMEOUT_S = 60.0


def wait_for(predicate, what: str):
    deadline = time.monotonic() + TIMEOUT_S
    while not (result := predicate()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)
    return result


@pytest.fixture
def disk_instance(tmp_path):
    """An instance on disk (SQLite files): the running job and the stop job use it from two
    threads, as two run workers would."""
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        yield instance


def test_start_then_stop_drains_and_records_where_it_stopped(project, engine, resources,
                                                             disk_instance):
    defs = build_definitions(project, resources=resources)
    started = {}
    runner = threading.Thread(target=lambda: started.update(result=defs.resolve_job_def(
        "start_clicks_enriched").execute_in_process(instance=disk_instance)))
    runner.start()
    wait_for(lambda: engine.spark.streams.active, "the continuous run")
    [run] = disk_instance.get_runs(dg.RunsFilter(tags={QUERY_TAG: "clicks_enriched"}))
    assert ("run", "clicks_enriched", "continuous") in engine.calls  # no YAML: the job's preset

    stop = defs.resolve_job_def("stop_clicks_enriched").execute_in_process(instance=disk_instance)
    runner.join(TIMEOUT_S)
    assert stop.success and started["result"].success
    metadata = disk_instance.get_latest_materialization_event(
        dg.AssetKey("clicks_enriched")).asset_materialization.metadata
    assert metadata["stopped"].value.startswith("on request (stop_clicks_enriched run ")
    assert (metadata["stopped_after_batch"].value, metadata["stopped_at_offsets"].value) == \
        (4, {"clickstream": {"0": 9}})  # the last committed batch of the (fake) stream
    logs = [e.message for e in disk_instance.all_logs(stop.run_id) if e.message]
    assert any(f"run {run.run_id[:8]} stopped after batch 4" in line for line in logs)

    launch_logs = []
    assert not tick(defs, disk_instance, "launch_streaming_queries", resources,
                    logs=launch_logs).run_requests  # stays stopped
    assert any("stopped on purpose" in line for line in launch_logs)


def test_stop_with_nothing_running_says_so(project, engine, resources, instance):
    defs = build_definitions(project, resources=resources)
    stop = defs.resolve_job_def("stop_clicks_enriched").execute_in_process(instance=instance)
    assert stop.success
    assert any("nothing to stop" in (e.message or "") for e in instance.all_logs(stop.run_id))
