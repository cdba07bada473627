"""The Dagster UI in headless Chromium against `dagster dev` with `make ui`'s instance (a run
queue; Spark runs limited by the `spark` pool), serving the hand-built SqlProject with the fake
engine: the Dagster layer alone — lineage labels, and the queue under the launch sensor with
every query's checks green after its run. (Start and stop by click, materialization, checks and
backfill from the UI are test_ui_sql.py's, on the real engine.) Screenshots go to
tests/artifacts/. The server lives as long as this module, so it never competes with the real
one of test_ui_sql.py."""

import time

import pytest

from tests.platform import ui_driver
from tests.platform.fixtures import REPO
from tests.platform.ui_driver import ARTIFACTS, green, serve

pytestmark = pytest.mark.platform
HAND_SPARK_RUNS = 2  # the pool limit of the hand server: 5 queries pending, 2 at a time
STREAMS = [f"stream_clicks_enriched{suffix}" for suffix in ("", "_2", "_3", "_4", "_5")]


@pytest.fixture(scope="module")
def hand_server(tmp_path_factory):
    """The hand-built SqlProject (+4 joins) with the fake engine (tests/platform/ui_fake_defs.py)."""
    server = serve(tmp_path_factory.mktemp("ui-hand"),
                   ["-f", str(REPO / "tests" / "platform" / "ui_fake_defs.py"), "-d", str(REPO)],
                   {}, HAND_SPARK_RUNS)
    yield server
    server.stop()


def test_hand_lineage_labels_every_node(hand_server, browser):
    page = ui_driver.new_page(browser)
    missing = ui_driver.lineage(page, hand_server, "clicks_enriched",
                                ["clickstream.topic", "click_users.topic",
                                 "clicks_enriched-clicks-repartition.topic", "clicks_enriched",
                                 "clicks_enriched.topic", "clicks_enriched.table",
                                 "dead-letters.clicks_enriched.topic",
                                 "dead-letters.clicks_enriched.table"],
                                ARTIFACTS / "hand-lineage.png")
    assert missing == []
    # A label too long for its node is shortened in the middle: a dead-letter node still says so.
    dead = {label: text for label, text in ui_driver.shown(page).items() if "dead-letters" in label}
    assert len(dead) == 2 and all(text.startswith("dead-letters") for text in dead.values()), dead


def test_hand_launch_sensor_queues_runs_and_every_query_ends_green(hand_server, browser):
    """All five queries pending: the sensor requests five runs at once, the queue lets
    HAND_SPARK_RUNS go at a time, and each ends with its checks evaluated and passed."""
    page = ui_driver.new_page(browser)
    ui_driver.switch_sensor(page, hand_server, "launch_streaming_queries",
                            ARTIFACTS / "hand-sensor-on.png")
    most, queued_seen, shot = 0, False, False
    deadline = time.monotonic() + ui_driver.RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        runs = [r for r in hand_server.graphql(ui_driver.ALL_RUNS)["runsOrError"]["results"]
                if r["jobName"] in STREAMS]
        running = sum(r["status"] in ("STARTING", "STARTED") for r in runs)
        most, queued_seen = max(most, running), queued_seen or any(
            r["status"] == "QUEUED" for r in runs)
        if queued_seen and running == HAND_SPARK_RUNS and not shot:  # the queue at work
            ui_driver.show_runs(page, hand_server, "Queued", ARTIFACTS / "hand-sensor-queue.png")
            shot = True
        if len(runs) == len(STREAMS) and all(r["status"] not in ui_driver.IN_FLIGHT for r in runs):
            break
        time.sleep(0.5)
    assert sorted((r["jobName"], r["status"]) for r in runs) == \
        [(job, "SUCCESS") for job in sorted(STREAMS)]
    assert (queued_seen, most) == (True, HAND_SPARK_RUNS)  # never more than the limit at once
    # Polling every 0.5 s can miss a short overlap: measure it from the runs' own records. What
    # the pool bounds is the steps that hold a Spark slot (the query, its checks); a run record
    # ends later, after its worker's teardown, when its slot is already the next run's.
    steps = [span for r in runs for span in pooled_steps(hand_server, r["runId"])]
    assert most_at_once(steps) <= HAND_SPARK_RUNS, steps
    for job in STREAMS:  # checks evaluated after a sensor run (live_status by the next status
        # tick at the latest), all green
        ui_driver.wait_for(lambda job=job: green(hand_server, job.removeprefix("stream_")),
                           f"the checks of {job} to pass", timeout_s=60)
    assert ui_driver.lineage(page, hand_server, "clicks_enriched_3", ["clicks_enriched_3"],
                             ARTIFACTS / "hand-sensor-all-green.png") == []


def pooled_steps(server, run_id: str) -> list[tuple[float, float]]:
    """(start, end) of each step of the run: every step of a stream_ job is in the Spark pool."""
    steps = server.graphql(ui_driver.STEP_STATS, {"runId": run_id})["runOrError"]["stepStats"]
    assert steps and all(s["startTime"] and s["endTime"] for s in steps), steps  # every step ended
    return [(s["startTime"], s["endTime"]) for s in steps]


def most_at_once(spans: list[tuple[float, float]]) -> int:
    """The most spans holding a slot at any one instant; a span ending when another starts freed
    its slot first, so ends sort before starts."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])
    most = running = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most
