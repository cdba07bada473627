"""Fixtures of the platform tests (test data in fixtures.py)."""

import dagster as dg
import pytest

from tests.platform.fixtures import FakeEngine, hand_project, install, produce_shifted_samples
from streamjoin.project import Project


@pytest.fixture
def project(tmp_path) -> Project:
    return hand_project(tmp_path)


@pytest.fixture
def engine(monkeypatch) -> FakeEngine:
    fake = FakeEngine()
    install(fake, monkeypatch.setattr)
    return fake


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
                    "Parameter `owners` of initializer `SensorDefinition.__init__`"):
        config.addinivalue_line("filterwarnings", f"ignore:{message}")
