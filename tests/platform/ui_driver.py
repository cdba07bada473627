"""Drives the Dagster UI in headless Chromium (Debian's `chromium` package; playwright's own
browser download is not used): the lineage of a query asset, a materialization launched from the
asset page, and a two-partition backfill launched from the backfill job's partitions page. Each
step is confirmed through the webserver's GraphQL API and leaves a screenshot."""

import time
from pathlib import Path

from playwright.sync_api import Browser, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.platform.webserver import Webserver

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
RUN_TIMEOUT_S = 300.0  # a Spark run on a busy 2-core machine takes minutes
FINISHED = ("SUCCESS", "FAILURE", "CANCELED")
RUNS = """query Runs($job: String!) { runsOrError(filter: {pipelineName: $job}) {
  ... on Runs { results { runId status tags { key value } } } } }"""
LATEST = """query Latest($path: [String!]!) { assetOrError(assetKey: {path: $path}) {
  ... on Asset { assetMaterializations(limit: 1) { runId
    metadataEntries { label ... on IntMetadataEntry { intValue } } } } } }"""
LOCATION = "{ workspaceOrError { ... on Workspace { locationEntries { name } } } }"


def new_page(browser: Browser) -> Page:
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
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


def shown(label: str, text: str) -> bool:
    """Whether the page shows the node label whole or shortened as `head…tail`."""
    if label in text:
        return True
    return any(head and label.startswith(head) and label.endswith(tail)
               for line in text.splitlines() if "…" in line
               for head, tail in [line.strip().split("…", 1)])


def lineage(page: Page, server: Webserver, query: str, labels: list[str], shot: Path) -> list[str]:
    """Open the query asset's lineage (neighbours, depth 3); return the labels not shown."""
    page.goto(f"{server.url}/assets/{query}?view=lineage&lineageScope=neighbors&lineageDepth=3")
    page.get_by_text("Latest event").first.wait_for()
    _dismiss_welcome(page)  # also lets the graph layout settle before the screenshot
    page.screenshot(path=str(shot))
    text = page.inner_text("body")
    return [label for label in labels if not shown(label, text)]


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
    page.goto(f"{server.url}/assets/{query}")
    page.locator("button", has_text="Materialize").first.click()
    page.get_by_role("button", name="Confirm").click()
    [run] = wait_runs(server, "__ASSET_JOB", 1)[:1]
    page.goto(f"{server.url}/runs/{run['runId']}")
    page.get_by_text("Success" if run["status"] == "SUCCESS" else "Failure").first.wait_for()
    page.screenshot(path=str(shot))
    latest = server.graphql(LATEST, {"path": [query]})["assetOrError"]["assetMaterializations"]
    metadata = {e["label"]: e.get("intValue") for e in latest[0]["metadataEntries"]} if latest \
        else {}
    return {"status": run["status"], "metadata": metadata}


def backfill(page: Page, server: Webserver, job: str, partitions: list[str],
             shot: Path) -> dict[str, str]:
    """Launch a backfill of `partitions` from the job's partitions page; {partition: status}."""
    location = server.graphql(LOCATION)["workspaceOrError"]["locationEntries"][0]["name"]
    page.goto(f"{server.url}/locations/{location}/jobs/{job}/partitions")
    page.get_by_role("button", name="Launch backfill…").click()
    selection = page.locator("input[placeholder^='ex:']")
    selection.fill(", ".join(partitions))
    selection.press("Enter")
    page.get_by_role("button", name=f"Submit {len(partitions)} runs").click()
    runs = wait_runs(server, job, len(partitions))
    page.goto(f"{server.url}/locations/{location}/jobs/{job}/partitions")
    page.get_by_text("Backfill history").wait_for()
    page.wait_for_timeout(1_000)
    page.screenshot(path=str(shot))
    return {tag["value"]: run["status"] for run in runs for tag in run["tags"]
            if tag["key"] == "dagster/partition"}
