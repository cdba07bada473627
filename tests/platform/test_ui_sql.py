"""The Dagster UI in headless Chromium against `dagster dev` with `make ui`'s instance, serving
the real sql/ folder plus a broken file on the session broker, its runs on the shared Spark
Connect server as `make ui` starts it: lineage, a broken file beside working ones, a
materialization and its checks, a dead letter, live lag, start and stop of a Spark query, a
backfill. Screenshots go to tests/artifacts/."""

import shutil
from pathlib import Path

import pytest
from deltalake import DeltaTable

from streamjoin.app.project import load_project
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from tests.platform import ui_driver
from tests.platform.fixtures import FIRST_DAY, FIRST_DAY_MS, REPO
from tests.platform.ui_driver import ARTIFACTS, NEXT_DAY, live_state, serve

pytestmark = pytest.mark.platform
BROKEN = "CREATE STREAM broken_join AS\n  SELECT * FROM orders o JOIN payments p ON p.id = o.id;\n"


@pytest.fixture(scope="module")
def sql_root(tmp_path_factory):
    return tmp_path_factory.mktemp("ui-sql")


@pytest.fixture(scope="module")
def sql_server(pageviews_samples, spark_connect, sql_root):
    """The real definitions over a copy of sql/ with a broken file; own STREAMJOIN_HOME
    (checkpoints, Delta), the session broker and Spark Connect server; one Spark run at a time."""
    root = sql_root
    shutil.copytree(REPO / "sql", root / "sql")
    (root / "sql" / "ksqldb" / "broken_join.sql").write_text(BROKEN)
    server = serve(root, ["-w", "workspace.yaml"],
                   {"STREAMJOIN_KAFKA_BOOTSTRAP": pageviews_samples, "STREAMJOIN_SPARK_REMOTE": spark_connect.url,
                    "STREAMJOIN_SQL_DIR": str(root / "sql")}, 1)
    yield server
    server.stop()


def test_sql_lineage_and_a_broken_file_beside_working_ones(sql_server, browser):
    page = ui_driver.new_page(browser)
    missing = ui_driver.lineage(page, sql_server, "clicks_enriched",
                                ["clickstream.topic", "click_users.topic",
                                 "CLICKS_ENRICHED-0-repartition.topic", "clicks_enriched",
                                 "CLICKS_ENRICHED.topic", "clicks_enriched.table"],
                                ARTIFACTS / "sql-lineage.png")
    assert missing == []
    assert ui_driver.lineage(page, sql_server, "broken_join", ["broken_join"],
                             ARTIFACTS / "sql-broken.png") == []  # drawn as a graph node
    page.goto(f"{sql_server.url}/assets/broken_join")
    page.get_by_text("broken_join.sql:2:").first.wait_for()
    page.screenshot(path=str(ARTIFACTS / "sql-broken-asset.png"))
    assert "ksqldb/broken_join.sql:2:" in page.inner_text("body")
    ui_driver.wait_for(lambda: live_state(sql_server, "broken_join").startswith("broken: "),
                       "the broken state", timeout_s=90)


def test_sql_materialize_checks_and_a_dead_letter(sql_server, pageviews_samples, browser):
    admin.produce(pageviews_samples, "pageviews",
                  [OutRecord(b'"User_9"', b'{"viewtime": ', FIRST_DAY_MS + 240_000)])
    views = sum(admin.end_offsets(pageviews_samples, "pageviews").values())
    page = ui_driver.new_page(browser)
    run = ui_driver.materialize(page, sql_server, "pageviews_enriched",
                                ARTIFACTS / "sql-materialize.png")
    assert run["status"] == "SUCCESS"
    dead = run["metadata"]["dead_letters"]
    assert dead >= 1 and run["metadata"]["output_rows"] + dead == views
    # The run evaluates every check, but a status-sensor tick that read the materializations just
    # before this one reports live_status against the previous one, hiding the run's evaluation
    # until its next tick (5 s here) reports against this one.
    checks = ui_driver.wait_for(lambda: evaluated_checks(sql_server, "pageviews_enriched"),
                                "every check evaluated for the materialization", timeout_s=30)
    assert checks["no_dead_letters"][0] == "FAILED"
    text = " ".join(ui_driver.show_asset(
        page, sql_server, "delta/dead-letters.pageviews_enriched.table",
        ARTIFACTS / "sql-dead-letters.png").split())
    assert "value: not valid JSON" in text and '{"viewtime":' in text


def evaluated_checks(server, query: str) -> dict | None:
    """The checks of the query's latest materialization once each has passed or failed."""
    found = ui_driver.checks(server, [query])
    return found if all(status in ("SUCCEEDED", "FAILED") for status, _ in found.values()) else None


def test_sql_live_lag(sql_server, pageviews_samples, browser):
    admin.produce(pageviews_samples, "pageviews",
                  [OutRecord(b'"User_1"', b'{"viewtime": 3, "pageid": "Page_ui"}',
                             FIRST_DAY_MS + 300_000)])
    ui_driver.wait_for(lambda: live_state(sql_server, "pageviews_enriched").startswith(
        "lagging, lag 1:"), "the lag to show", timeout_s=90)
    text = ui_driver.show_check(ui_driver.new_page(browser), sql_server, "pageviews_enriched",
                                "live_status", ARTIFACTS / "sql-live-lag.png")
    assert "1 new record since run" in text


def overview_rows(server) -> dict:
    rows = ui_driver.latest_observation(server, ["streamjoin_overview"]).get("queries") or []
    return {row["query"]: row for row in rows}


def test_sql_overview_every_query_with_its_figures(sql_server, browser):
    """Issue 40 item 2: one overview lists every query with its state, lag (total and per
    partition), rates, last batch, watermark as a time, late/dropped records, dead letters and
    state size; the query's own observation holds them too, its lag per partition as a table."""
    names = {q.name for q in load_project(REPO / "sql").queries} | {"broken_join"}
    rows = ui_driver.wait_for(lambda: (found := overview_rows(sql_server)) and set(found) >= names
                              and found["pageviews_enriched"]["watermark"] and found,
                              "the overview with the materialized query's figures", timeout_s=90)
    views = rows["pageviews_enriched"]
    assert views["watermark"].endswith(" UTC") and views["last batch"] != ""
    assert "pageviews/0: " in views["lag per partition"] and views["state"] and views["dead letters"] != ""
    assert {"read/s", "in/s", "out/s", "late", "dropped", "state bytes"} <= set(views)
    page = ui_driver.new_page(browser)
    text = ui_driver.show_events(page, sql_server, "streamjoin_overview", "lag per partition",
                                 ARTIFACTS / "sql-overview.png")
    assert "pageviews_enriched" in text and "clicks_enriched" in text
    figures = ui_driver.latest_observation(sql_server, ["pageviews_enriched"])
    assert {"lag_by_partition", "read_per_second", "output_per_second", "state_size_bytes",
            "watermark"} <= set(figures)
    assert {row["topic"] for row in figures["lag_by_partition"]} == {"pageviews", "users"}
    text = ui_driver.show_events(page, sql_server, "pageviews_enriched", "lag_by_partition",
                                 ARTIFACTS / "sql-figures.png")
    assert "read_per_second" in text


def test_sql_start_stop_and_dead_letters_while_running(sql_server, pageviews_samples, browser):
    """Start and stop by click from the asset page; issue 40 item 3: a dead letter shows while
    the continuous query runs, its key decoded with the source's format (SQL type shown), and
    the output topic's preview shows typed columns, not bytes."""
    admin.produce(pageviews_samples, "pageviews",
                  [OutRecord(b'"User_7"', b'{"viewtime": 4,', FIRST_DAY_MS + 360_000)])
    page = ui_driver.new_page(browser)
    run = ui_driver.launch(page, sql_server, "start_pageviews_enriched",  # the asset page's link
                           ARTIFACTS / "sql-start.png", asset_job=True, from_asset="pageviews_enriched")
    ui_driver.wait_for(lambda: live_state(sql_server, "pageviews_enriched").startswith(
        "running, lag 0"), "the running query to catch up")
    text = ui_driver.show_check(page, sql_server, "pageviews_enriched", "live_status",
                                ARTIFACTS / "sql-live-running.png")
    assert f"running, lag 0: run {run[:8]} (continuous)" in text
    dead_topic = ["kafka", "dead-letters.pageviews_enriched.topic"]
    letters = ui_driver.wait_for(lambda: [row for row in ui_driver.latest_observation(
        sql_server, dead_topic).get("latest_rows") or [] if '"viewtime": 4,' in str(row)],
        "the new dead letter while the query runs", timeout_s=90)
    assert letters[0].get("USERID STRING (key)") == '"User_7"'
    assert [r["status"] for r in ui_driver.job_runs(sql_server, "start_pageviews_enriched")
            if r["runId"] == run] == ["STARTED"]
    text = ui_driver.show_events(page, sql_server, "/".join(dead_topic), "USERID STRING (key)",
                                 ARTIFACTS / "sql-dead-letters-running.png")
    assert "value (raw)" in text and "base64" not in text
    stop = ui_driver.launch(page, sql_server, "stop_pageviews_enriched", ARTIFACTS / "sql-stop.png",
                            asset_job=False, from_asset="pageviews_enriched")
    ui_driver.wait_for(lambda: live_state(sql_server, "pageviews_enriched").startswith("stopped"),
                       "the stopped state")
    text = ui_driver.show_check(page, sql_server, "pageviews_enriched", "live_status",
                                ARTIFACTS / "sql-live-stopped.png")
    assert f"stopped on request (stop_pageviews_enriched run {stop[:8]})" in text
    text = ui_driver.show_asset(page, sql_server, "pageviews_enriched",
                                ARTIFACTS / "sql-stopped.png")
    assert "stopped_at_offsets" in text and '"pageviews"' in text
    assert [r["status"] for r in ui_driver.job_runs(sql_server, "start_pageviews_enriched")
            if r["runId"] == run] == ["SUCCESS"]
    text = ui_driver.show_asset(page, sql_server, "kafka/PAGEVIEWS_ENRICHED.topic",
                                ARTIFACTS / "sql-output-preview.png")
    assert "USERID STRING (key)" in text and "REGIONID STRING" in text


def test_sql_reset_from_the_asset_page_then_both_outputs_hold_each_result_once(
        sql_server, sql_root, pageviews_samples, browser):
    """Reset (its link on the asset page, one click) and run again: the output topic, the Delta
    table and both dead-letter outputs hold each result once, as the run's figures say. The
    asset page shows its SQL and EXPLAIN whole, and no tag claims the mode of a live run."""
    page = ui_driver.new_page(browser)
    assert ui_driver.cut_off_lines(page, sql_server, "pageviews_enriched",
                                   ARTIFACTS / "sql-controls.png") == []
    text = page.inner_text("body")
    assert "declared_mode" in text and "streamjoin/mode" not in text
    reset = ui_driver.launch(page, sql_server, "reset_pageviews_enriched",
                             ARTIFACTS / "sql-reset.png", asset_job=False,
                             from_asset="pageviews_enriched")
    ui_driver.wait_for(lambda: {r["runId"]: r["status"] for r in ui_driver.job_runs(
        sql_server, "reset_pageviews_enriched")}.get(reset) in ui_driver.FINISHED, "the reset")
    run = ui_driver.materialize(page, sql_server, "pageviews_enriched",
                                ARTIFACTS / "sql-after-reset.png")
    assert run["status"] == "SUCCESS"
    rows, dead = run["metadata"]["output_rows"], run["metadata"]["dead_letters"]
    views = sum(admin.end_offsets(pageviews_samples, "pageviews").values())
    assert rows + dead == views and dead >= 1
    query = load_project(REPO / "sql").query("pageviews_enriched")
    delta = sql_root / "streamjoin" / "delta" / query.name
    assert outputs(pageviews_samples, query.output_topic, delta) == (rows, rows)
    assert outputs(pageviews_samples, f"{query.name}-dead-letters",
                   Path(f"{delta}-dead-letters")) == (dead, dead)


def outputs(bootstrap: str, topic: str, table: Path) -> tuple[int, int]:
    """(records on the topic, rows in the Delta table)."""
    return len(admin.read_all(bootstrap, topic)), DeltaTable(str(table)).to_pyarrow_table().num_rows


def test_sql_backfill(sql_server, browser):
    """The backfill partitions are the two days the input data is in (not every day since
    1970); a two-day backfill; then the backfill is done (not "In progress"), the table's page
    keeps its preview, with no streaming figure recorded as a zero, and the query's figures
    (input_rows, ...) are the last run's still."""
    # Issue 40 item 5: the partitions are the windows holding data (from STREAMJOIN_BACKFILL_START)
    assert ui_driver.wait_for(lambda: ui_driver.partition_keys(
        sql_server, "backfill_pageviews_enriched") == [FIRST_DAY, NEXT_DAY] or None,
        "the windows holding data as partitions", timeout_s=60)
    windows = ui_driver.latest_observation(sql_server, ["pageviews_enriched"])["data_windows"]
    assert [row["window"] for row in windows] == [FIRST_DAY, NEXT_DAY]
    before = ui_driver.server_latest(sql_server, ["pageviews_enriched"])
    page = ui_driver.new_page(browser)
    statuses = ui_driver.backfill(page, sql_server, "backfill_pageviews_enriched",
                                  [FIRST_DAY, NEXT_DAY], ARTIFACTS / "sql-backfill.png")
    assert statuses == {FIRST_DAY: "SUCCESS", NEXT_DAY: "SUCCESS"}
    ui_driver.wait_for(lambda: ui_driver.backfill_statuses(sql_server) in (
        ["COMPLETED"], ["COMPLETED_SUCCESS"]), "the backfill to complete", timeout_s=90)
    history = ui_driver.show_partitions(page, sql_server, "backfill_pageviews_enriched",
                                        ARTIFACTS / "sql-backfill-done.png")
    assert "In progress" not in history, history[-1500:]  # what the page says, once it is done
    text = ui_driver.show_asset(page, sql_server, "delta/pageviews_enriched.table",
                                ARTIFACTS / "sql-backfill-table.png")
    assert "latest_rows" in text and "partition" in text and "input_rows" not in text
    assert ui_driver.server_latest(sql_server, ["pageviews_enriched"]) == before  # figures stay


# Dagster 1.13 answers `Asset` for any key, one it never knew too; a wiped asset is one with no
# definition and no materialization or observation left.
ASSET = """query Asset($path: [String!]!) { assetOrError(assetKey: {path: $path}) { __typename
  ... on Asset { definition { id } assetMaterializations(limit: 1) { runId } assetObservations(limit: 1) { runId } } } }"""


def wiped(server, path: list[str]) -> bool:
    asset = server.graphql(ASSET, {"path": path})["assetOrError"]
    return asset["__typename"] == "AssetNotFoundError" or not (
        asset["definition"] or asset["assetMaterializations"] or asset["assetObservations"])


def test_sql_deleted_file_leaves_no_assets(sql_server, sql_root, browser):
    """Issue 40 item 6: a deleted query file's assets (the query, its topics and tables, with
    their materializations) leave the catalog at the next status tick after the reload."""
    (sql_root / "sql" / "ksqldb" / "pageviews_enriched.sql").unlink()
    sql_server.reload(ui_driver.location(sql_server))
    for path in (["pageviews_enriched"], ["delta", "pageviews_enriched.table"],
                 ["kafka", "dead-letters.pageviews_enriched.topic"]):
        ui_driver.wait_for(lambda: wiped(sql_server, path), f"{'/'.join(path)} wiped", timeout_s=90)
    page = ui_driver.new_page(browser)
    page.goto(f"{sql_server.url}/assets?search=pageviews")
    ui_driver.settle(page)
    page.screenshot(path=str(ARTIFACTS / "sql-orphans-wiped.png"))
    assert "pageviews_enriched.table" not in page.inner_text("body")
