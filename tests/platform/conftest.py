"""Fixtures of the platform tests (test data in fixtures.py)."""

import dagster as dg
import pytest

from streamjoin.app.project import SqlProject
from tests.platform import ui_driver
from tests.platform.fixtures import (
    FakeEngine,
    fake_resources,
    hand_project,
    produce_shifted_samples,
)


@pytest.fixture
def project(tmp_path) -> SqlProject:
    return hand_project(tmp_path)


@pytest.fixture
def engine() -> FakeEngine:
    return FakeEngine()


@pytest.fixture
def resources(engine, tmp_path) -> dict:
    """The Dagster resources, with the fake engine handed out by the `engine` resource; its
    state and Delta tables under tmp_path."""
    return fake_resources(engine, home=str(tmp_path / "home"), delta_root=str(tmp_path / "delta"))


@pytest.fixture(scope="session")
def pageviews_samples(kafka_bootstrap, tmp_path_factory) -> str:
    """users and pageviews (ksqldb samples) on the session broker; returns the bootstrap."""
    produce_shifted_samples(kafka_bootstrap, tmp_path_factory.mktemp("samples"), "ksqldb",
                            ("users", "pageviews"), split_source="pageviews")
    return kafka_bootstrap


@pytest.fixture
def instance():
    # In-memory storage: a sqlite instance costs seconds per test.
    with dg.DagsterInstance.ephemeral() as instance:
        yield instance


def pytest_configure(config):
    # Dagster's own notices about the observable source assets we use on purpose.
    for message in ("Function `observable_source_asset` is currently in beta",
                    "Property `OpDefinition.version` is deprecated",
                    "Parameter `owners` of initializer `SensorDefinition.__init__`",
                    # Dagster's nested-resource setup calls its own deprecated property.
                    "InitResourceContext.dagster_run is deprecated"):
        config.addinivalue_line("filterwarnings", f"ignore:{message}")


@pytest.fixture(scope="session")
def chromium():
    """Headless Debian chromium for the UI tests (skipped, saying why, where it is missing)."""
    if not ui_driver.CHROMIUM.exists():
        reason = f"{ui_driver.CHROMIUM} missing: apt-get install chromium"
        print(reason)
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    ui_driver.ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(ui_driver.CHROMIUM),
                                              args=ui_driver.CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def browser(chromium):
    """One test's browser window: the pages it opens close after it. An open Dagster page keeps
    polling its webserver; left open, the pages of earlier tests kept ~10 renderers busy."""
    context = chromium.new_context(viewport=ui_driver.VIEWPORT)
    yield context
    context.close()
