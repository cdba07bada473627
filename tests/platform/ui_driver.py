"""Drives the Dagster UI in headless Chromium (Debian's `chromium` package; playwright's own
browser download is not used): the lineage of a query asset, a materialization launched from the
asset page, a job launched by one click (an asset job's "Materialize all", an op job's "Launch
Run"), a sensor switched on, a check's latest evaluation, an asset's latest metadata, and a
two-partition backfill launched from the backfill job's partitions page. Each step is confirmed
through the webserver's GraphQL API and leaves a screenshot."""

import time
from pathlib import Path

from playwright.sync_api import BrowserContext, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.platform import webserver
from tests.platform.fixtures import FIRST_DAY, REPO
from tests.platform.webserver import Webserver

CHROMIUM = Path("/usr/bin/chromium")
VIEWPORT = {"width": 1600, "height": 1000}
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
RUN_TIMEOUT_S = 300.0  # a Spark run on a busy 2-core machine takes minutes
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")
ARTIFACTS = REPO / "tests" / "artifacts"  # the screenshots
NEXT_DAY = "2026-11-20"  # a backfill partition after FIRST_DAY
RUNS = """query Runs($job: String!) { runsOrError(filter: {pipelineName: $job}) {
  ... on Runs { results { runId status tags { key value } } } } }"""
LATEST = """query Latest($path: [String!]!) { assetOrError(assetKey: {path: $path}) {
  ... on Asset { assetMaterializations(limit: 1) { runId
    metadataEntries { label ... on IntMetadataEntry { intValue } } } } } }"""
LOCATION = "{ workspaceOrError { ... on Workspace { locationEntries { name } } } }"
ALL_RUNS = """{ runsOrError(limit: 200) { ... on Runs { results {
  runId jobName status startTime endTime } } } }"""
STEP_STATS = """query Steps($runId: ID!) { runOrError(runId: $runId) { ... on Run {
  stepStats { stepKey startTime endTime } } } }"""
CHECKS = """query Checks($path: [String!]!) { assetNodeOrError(assetKey: {path: $path}) {
  ... on AssetNode { assetChecksOrError { ... on AssetChecks { checks { name
    executionForLatestMaterialization { status evaluation { description } } } } } } } }"""
SENSOR = """query Sensor($selector: SensorSelector!) { sensorOrError(sensorSelector: $selector) {
  ... on Sensor { sensorState { status } } } }"""
IN_FLIGHT = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")


def new_page(browser: BrowserContext) -> Page:
    page = browser.new_page()
    page.set_default_timeout(30_000)
    # A fresh DAGSTER_HOME greets the first visit with a 'Join the community' dialog, shown some
    # time after the page: close it whenever it blocks one of our actions.
    page.add_locator_handler(page.get_by_role("button", name="Skip"), lambda skip: skip.click())
    return page


def _dismiss_welcome(page: Page) -> None:
    """Close the welcome dialog before a screenshot if it is (or soon becomes) visible."""
    try:
        page.get_by_role("button", name="Skip").click(timeout=3_000)
    except PlaywrightTimeout:
        pass


def settle(page: Page, timeout_ms: int = 15_000) -> None:
    """Let the live data arrive before a screenshot: no "Loading" left (best effort)."""
    try:
        page.wait_for_function("() => !document.body.innerText.includes('Loading')",
                               timeout=timeout_ms)
    except PlaywrightTimeout:
        pass
    page.wait_for_timeout(500)


# The asset graph draws each node's full label in its `data-tooltip` (the text may be shortened
# as `head…tail`); matching those, not the page's text, keeps the header's asset name from
# passing for a node.
DRAWN = "() => [...document.querySelectorAll('[data-tooltip]')].map(node => node.dataset.tooltip)"


def lineage(page: Page, server: Webserver, query: str, labels: list[str], shot: Path) -> list[str]:
    """Open the query asset's lineage (neighbours, depth 3); return the labels no graph node has."""
    page.goto(f"{server.url}/assets/{query}?view=lineage&lineageScope=neighbors&lineageDepth=3")
    page.get_by_text("Latest event").first.wait_for()
    _dismiss_welcome(page)  # also lets the graph layout settle before the screenshot
    settle(page)
    try:  # the graph lays its nodes out after the page has loaded
        page.wait_for_function(f"labels => labels.every(label => ({DRAWN})().includes(label))",
                               arg=labels, timeout=15_000)
    except PlaywrightTimeout:
        pass  # the labels still missing are returned below
    page.screenshot(path=str(shot))
    drawn = set(page.evaluate(DRAWN))
    return [label for label in labels if label not in drawn]


def shown(page: Page) -> dict[str, str]:
    """{full label: the text the graph shows for it} of the nodes drawn on the page."""
    return dict(page.evaluate(
        "() => [...document.querySelectorAll('[data-tooltip]')].map(n => [n.dataset.tooltip, n.innerText])"))


def cut_off_lines(page: Page, server: Webserver, asset: str, shot: Path) -> list[str]:
    """Open the asset's whole description ("Show more"); the longest line of each code block
    wider than its box."""
    page.goto(f"{server.url}/assets/{asset}")
    page.get_by_text("Show more").first.click()
    _dismiss_welcome(page)
    settle(page)
    page.screenshot(path=str(shot), full_page=True)
    return page.evaluate("""() => [...document.querySelectorAll('pre')]
        .filter(block => block.scrollWidth > block.clientWidth + 1)
        .map(block => block.innerText.split('\\n').reduce((a, b) => b.length > a.length ? b : a, ''))""")


def wait_runs(server: Webserver, job: str, count: int) -> list[dict]:
    """The job's runs once `count` of them finished (newest first)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        runs = server.graphql(RUNS, {"job": job})["runsOrError"]["results"]
        if sum(r["status"] in FINISHED for r in runs) >= count or time.monotonic() > deadline:
            return runs
        time.sleep(1)


def materialize(page: Page, server: Webserver, query: str, shot: Path) -> dict:
    """Click Materialize on the asset page (confirming the multi-asset's sibling outputs) and
    return the finished run and the asset's latest materialization metadata."""
    before = {run["runId"] for run in job_runs(server, "__ASSET_JOB")}
    page.goto(f"{server.url}/assets/{query}")
    page.locator("button", has_text="Materialize").first.click()
    page.get_by_role("button", name="Confirm").click()
    run = wait_for(lambda: [r for r in wait_runs(server, "__ASSET_JOB", len(before) + 1)
                            if r["runId"] not in before], "the new materialization")[0]
    page.goto(f"{server.url}/runs/{run['runId']}")
    page.get_by_text("Success" if run["status"] == "SUCCESS" else "Failure").first.wait_for()
    page.screenshot(path=str(shot))
    latest = server.graphql(LATEST, {"path": [query]})["assetOrError"]["assetMaterializations"]
    metadata = {e["label"]: e.get("intValue") for e in latest[0]["metadataEntries"]} if latest \
        else {}
    return {"status": run["status"], "metadata": metadata}


def server_latest(server: Webserver, path: list[str]) -> dict:
    """{label: int value} of the asset's latest materialization."""
    latest = server.graphql(LATEST, {"path": path})["assetOrError"]["assetMaterializations"]
    return {e["label"]: e.get("intValue") for e in latest[0]["metadataEntries"]} if latest else {}


def backfill(page: Page, server: Webserver, job: str, partitions: list[str],
             shot: Path) -> dict[str, str]:
    """Launch a backfill of `partitions` from the job's partitions page; {partition: status}."""
    page.goto(f"{server.url}/locations/{location(server)}/jobs/{job}/partitions")
    page.get_by_role("button", name="Launch backfill…").click()
    selection = page.locator("input[placeholder^='ex:']")
    selection.fill(", ".join(partitions))
    selection.press("Enter")
    page.get_by_role("button", name=f"Submit {len(partitions)} runs").click()
    runs = wait_runs(server, job, len(partitions))
    show_partitions(page, server, job, shot)
    return {tag["value"]: run["status"] for run in runs for tag in run["tags"]
            if tag["key"] == "dagster/partition"}


def show_partitions(page: Page, server: Webserver, job: str, shot: Path) -> str:
    """The job's partitions page with its backfill history, as a user sees it: its text."""
    page.goto(f"{server.url}/locations/{location(server)}/jobs/{job}/partitions")
    page.get_by_text("Backfill history").wait_for()
    page.wait_for_timeout(1_000)
    page.screenshot(path=str(shot))
    return page.inner_text("body")


BACKFILLS = "{ partitionBackfillsOrError { ... on PartitionBackfills { results { status } } } }"


def backfill_statuses(server: Webserver) -> list[str]:
    return [b["status"] for b in server.graphql(BACKFILLS)["partitionBackfillsOrError"]["results"]]


def location(server: Webserver) -> str:
    return server.graphql(LOCATION)["workspaceOrError"]["locationEntries"][0]["name"]


def wait_for(predicate, what: str, timeout_s: float = RUN_TIMEOUT_S, poll_s: float = 1.0):
    """The first truthy value of `predicate()`; fails after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(poll_s)
    return value


def job_runs(server: Webserver, job: str) -> list[dict]:
    return server.graphql(RUNS, {"job": job})["runsOrError"]["results"]


def launch(page: Page, server: Webserver, job: str, shot: Path, asset_job: bool,
           from_asset: str | None = None) -> str:
    """One click: "Materialize all" on an asset job's page (its preset config), "Launch Run" on
    an op job's launchpad; `from_asset`: reached by the link on that asset's page. Returns the
    new run's id."""
    before = {run["runId"] for run in job_runs(server, job)}
    page_path = "" if asset_job else "/playground"
    if from_asset:
        page.goto(f"{server.url}/assets/{from_asset}")
        page.get_by_role("link", name=job, exact=True).first.click()
        page.wait_for_url(f"**/jobs/{job}{page_path}**")
    else:
        page.goto(f"{server.url}/locations/{location(server)}/jobs/{job}{page_path}")
    if asset_job:
        page.locator("button", has_text="Materialize all").first.click()
    else:
        page.get_by_role("button", name="Launch Run").click()
    run = wait_for(lambda: [r for r in job_runs(server, job) if r["runId"] not in before],
                   f"a run of {job}", timeout_s=60)[0]
    settle(page)
    page.screenshot(path=str(shot))
    return run["runId"]


def switch_sensor(page: Page, server: Webserver, sensor: str, shot: Path) -> None:
    """Turn the sensor on with its switch on the sensor's page."""
    loc = location(server)
    page.goto(f"{server.url}/locations/{loc}/sensors/{sensor}")
    # The switch is a label drawn around a hidden checkbox: click the label.
    page.locator("label", has=page.locator("input[type=checkbox]")).first.click()
    selector = {"repositoryLocationName": loc, "repositoryName": "__repository__",
                "sensorName": sensor}
    wait_for(lambda: server.graphql(SENSOR, {"selector": selector})["sensorOrError"][
        "sensorState"]["status"] == "RUNNING", f"{sensor} on", timeout_s=30)
    _dismiss_welcome(page)
    page.screenshot(path=str(shot))


def checks(server: Webserver, path: list[str]) -> dict[str, tuple[str | None, str | None]]:
    """{check: (status of its execution for the latest materialization, its description)}."""
    node = server.graphql(CHECKS, {"path": path})["assetNodeOrError"]
    result = {}
    for check in node["assetChecksOrError"]["checks"]:
        execution = check["executionForLatestMaterialization"] or {}
        evaluation = execution.get("evaluation") or {}
        result[check["name"]] = (execution.get("status"), evaluation.get("description"))
    return result


def show_check(page: Page, server: Webserver, asset: str, check: str, shot: Path) -> str:
    """Open the check's page (description, latest evaluation, metadata, plots); its text."""
    return _page_text(page, f"{server.url}/assets/{asset}?view=checks&checkDetail={check}", "Latest execution", shot)


def show_asset(page: Page, server: Webserver, key: str, shot: Path) -> str:
    """Open the asset's overview (`key` as in the URL, e.g. delta/x.table): its latest
    materialization's metadata, tables (the `latest_rows` previews) included. The page's text."""
    return _page_text(page, f"{server.url}/assets/{key}", "Latest materialization", shot)


def _page_text(page: Page, url: str, loaded_when: str, shot: Path) -> str:
    """Open `url`, wait until `loaded_when` shows, screenshot the whole page; its text."""
    page.goto(url)
    page.get_by_text(loaded_when).first.wait_for()
    _dismiss_welcome(page)
    settle(page)
    page.screenshot(path=str(shot), full_page=True)
    return page.inner_text("body")


def show_runs(page: Page, server: Webserver, status: str, shot: Path) -> None:
    """The runs page once a run shows `status` (best effort: the queue may have moved on)."""
    page.goto(f"{server.url}/runs")
    try:
        page.locator("tbody").get_by_text(status).first.wait_for(timeout=10_000)
    except PlaywrightTimeout:
        pass
    page.screenshot(path=str(shot))


def serve(root: Path, target: list[str], env: dict[str, str], spark_runs: int) -> Webserver:
    """`dagster dev` on `target` with its state under `root`, backfill partitions from FIRST_DAY
    and the status sensor ticking every 5 s."""
    return webserver.start(REPO, target, root / "dagster_home",
                           {"STREAMJOIN_HOME": str(root / "streamjoin"),
                            "STREAMJOIN_BACKFILL_START": FIRST_DAY,
                            "STREAMJOIN_STATUS_INTERVAL_S": "5", **env}, spark_runs)


def green(server: Webserver, query: str) -> bool:
    return {status for status, _ in checks(server, [query]).values()} == {"SUCCEEDED"}


def live_state(server: Webserver, query: str) -> str:
    return checks(server, [query])["live_status"][1] or ""


OBSERVED = """query Observed($path: [String!]!) { assetOrError(assetKey: {path: $path}) {
  ... on Asset { assetObservations(limit: 1) { runId metadataEntries { label
    ... on IntMetadataEntry { intValue } ... on FloatMetadataEntry { floatValue }
    ... on TextMetadataEntry { text } ... on TableMetadataEntry { table { records } } } } } } }"""
PARTITION_KEYS = """query Keys($job: String!, $location: String!) { pipelineOrError(params: {
  pipelineName: $job, repositoryName: "__repository__", repositoryLocationName: $location}) {
  ... on Pipeline { partitionKeysOrError { partitionKeys } } } }"""


def latest_observation(server: Webserver, path: list[str]) -> dict:
    """{label: value} of the asset's latest observation ({} before any); a table as its rows."""
    import json

    found = server.graphql(OBSERVED, {"path": path})["assetOrError"].get("assetObservations") or []
    if not found:
        return {}
    values = {}
    for entry in found[0]["metadataEntries"]:
        table = entry.get("table")
        values[entry["label"]] = [json.loads(r) for r in table["records"]] if table else next(
            (entry[k] for k in ("intValue", "floatValue", "text") if k in entry), None)
    return values


def partition_keys(server: Webserver, job: str) -> list[str]:
    found = server.graphql(PARTITION_KEYS, {"job": job, "location": location(server)})
    return found["pipelineOrError"]["partitionKeysOrError"]["partitionKeys"]


def show_events(page: Page, server: Webserver, key: str, loaded_when: str, shot: Path) -> str:
    """The asset's Events tab with its latest event (an observation's metadata, tables too)."""
    return _page_text(page, f"{server.url}/assets/{key}?view=events", loaded_when, shot)

