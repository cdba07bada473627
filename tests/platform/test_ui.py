"""The Dagster UI in headless Chromium against `dagster dev` (workspace.yaml -> definitions.py):
lineage of a join, a materialization and a two-partition backfill launched from the browser.
Two servers: the real sql/ folder and engine on the session broker, and the hand-built SqlProject
with the fake engine (the Dagster layer alone). Screenshots go to tests/artifacts/."""

from pathlib import Path

import pytest

from streamjoin.kafka import admin
from tests.platform import ui_driver, webserver
from tests.platform.fixtures import FIRST_DAY, REPO

pytestmark = pytest.mark.platform
ARTIFACTS = REPO / "tests" / "artifacts"
NEXT_DAY = "2026-11-20"


@pytest.fixture(scope="module")
def browser():
    if not ui_driver.CHROMIUM.exists():
        reason = f"{ui_driver.CHROMIUM} missing: apt-get install chromium"
        print(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(ui_driver.CHROMIUM),
                                              args=ui_driver.CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def serve(root: Path, target: list[str], env: dict[str, str]):
    server = webserver.start(REPO, target, root / "dagster_home",
                             {"STREAMJOIN_HOME": str(root / "streamjoin"),
                              "STREAMJOIN_BACKFILL_START": FIRST_DAY, **env})
    return server


@pytest.fixture(scope="module")
def sql_server(pageviews_samples, tmp_path_factory):
    """The real definitions; own STREAMJOIN_HOME (checkpoints, Delta), the session broker."""
    server = serve(tmp_path_factory.mktemp("ui-sql"), ["-w", "workspace.yaml"],
                   {"STREAMJOIN_KAFKA_BOOTSTRAP": pageviews_samples})
    yield server
    server.stop()


def test_ui_on_sql_folder(sql_server, pageviews_samples, browser):
    page = ui_driver.new_page(browser)
    missing = ui_driver.lineage(page, sql_server, "clicks_enriched",
                                ["clickstream", "click_users", "CLICKS_ENRICHED-0-repartition",
                                 "clicks_enriched", "CLICKS_ENRICHED", "delta"],
                                ARTIFACTS / "sql-lineage.png")
    assert missing == []
    views = sum(admin.end_offsets(pageviews_samples, "pageviews").values())
    run = ui_driver.materialize(page, sql_server, "pageviews_enriched",
                                ARTIFACTS / "sql-materialize.png")
    assert (run["status"], run["metadata"]["output_rows"]) == ("SUCCESS", views)
    statuses = ui_driver.backfill(page, sql_server, "backfill_pageviews_enriched",
                                  [FIRST_DAY, NEXT_DAY], ARTIFACTS / "sql-backfill.png")
    assert statuses == {FIRST_DAY: "SUCCESS", NEXT_DAY: "SUCCESS"}


@pytest.fixture(scope="module")
def hand_server(tmp_path_factory):
    """The hand-built SqlProject with the fake engine (tests/platform/ui_fake_defs.py)."""
    server = serve(tmp_path_factory.mktemp("ui-hand"),
                   ["-f", str(REPO / "tests" / "platform" / "ui_fake_defs.py"), "-d", str(REPO)],
                   {})
    yield server
    server.stop()


def test_ui_on_hand_project(hand_server, browser):
    page = ui_driver.new_page(browser)
    missing = ui_driver.lineage(page, hand_server, "clicks_enriched",
                                ["clickstream", "click_users", "clicks_enriched-clicks-repartition",
                                 "clicks_enriched", "delta"], ARTIFACTS / "hand-lineage.png")
    assert missing == []
    run = ui_driver.materialize(page, hand_server, "clicks_enriched",
                                ARTIFACTS / "hand-materialize.png")
    assert (run["status"], run["metadata"]["output_rows"]) == ("SUCCESS", 7)  # FakeEngine's report
    statuses = ui_driver.backfill(page, hand_server, "backfill_clicks_enriched",
                                  [FIRST_DAY, NEXT_DAY], ARTIFACTS / "hand-backfill.png")
    assert statuses == {FIRST_DAY: "SUCCESS", NEXT_DAY: "SUCCESS"}
