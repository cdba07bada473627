"""Session fixtures shared by every test tier. All are lazy: a pure test requests none of the
expensive ones, so it starts neither the broker nor Spark.

- kafka_bootstrap: "host:port" of one embedded broker per test session, Apache Kafka unless
  STREAMJOIN_BROKER_KIND says otherwise (or of STREAMJOIN_KAFKA_BOOTSTRAP when set); stopped at
  the end.
- spark: one SparkSession per test session (streamjoin data sources registered); stopped at end.
- spark_connect: the server state of one Spark Connect server per test session (as `make ui`
  starts it), for the tests of runs that connect to a shared Spark; stopped at the end.
- schema_registry: the project's schema registry (streamjoin.registry), one per test session,
  made the default of the SerdeSpecs the session builds (`Registry`: url, auth); stopped at the end.
- kafka_cluster: a 3-node Apache Kafka cluster on loopback (`kafka.cluster.LoopbackCluster`:
  three replicas of every topic, two in sync), one per test session, for the fault tests that
  stop its nodes (each starts again what it stopped); stopped at the end.
- tmp_delta_root: a fresh directory for Delta tables.
- unique_topic: a topic name no other test uses (the broker is shared).
- conformance_dir: ../shared/conformance (read at test time, never copied).
"""

from __future__ import annotations

import os
import re
import uuid
from pathlib import Path

import pytest

from tests.paths import CONFORMANCE


@pytest.fixture(scope="session", autouse=True)
def streamjoin_home(tmp_path_factory) -> Path:
    """A per-session STREAMJOIN_HOME so tests never touch ./var (broker state, checkpoints). Every
    Spark driver the tests start (here, or in a Dagster run's own process) takes the quick JIT
    tier unless the environment names JVM options: the suite runs hundreds of small queries."""
    from streamjoin.settings import Settings
    from streamjoin.spark.session import short_lived

    home = tmp_path_factory.mktemp("streamjoin_home")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("STREAMJOIN_HOME", str(home))
        # The suites run on the broker users run; Tansu, the demo's quick default, is tested by
        # tests/integration/test_broker.py (and by the suites with STREAMJOIN_BROKER_KIND=tansu).
        env.setenv("STREAMJOIN_BROKER_KIND", os.environ.get("STREAMJOIN_BROKER_KIND") or "kafka")
        env.setenv("STREAMJOIN_SPARK_DRIVER_JAVA_OPTIONS",
                   short_lived(Settings.from_env()).spark_driver_java_options)
        yield home


@pytest.fixture(scope="session")
def kafka_bootstrap(streamjoin_home) -> str:
    from streamjoin.kafka import embedded as broker
    from streamjoin.settings import Settings

    settings = Settings.from_env()
    if settings.kafka_bootstrap:
        yield settings.kafka_bootstrap
        return
    state = broker.start(settings, detached=False)  # dies with this process if it is killed
    yield state.bootstrap
    broker.stop(settings)


@pytest.fixture(scope="session")
def schema_registry(streamjoin_home):
    from streamjoin.registry import service
    from streamjoin.serde.registry_codecs import Registry, configure
    from streamjoin.settings import Settings

    settings = Settings.from_env()
    if settings.schema_registry_url:
        registry = Registry(settings.schema_registry_url, settings.schema_registry_auth)
        configure(registry)
        yield registry
        return
    state = service.start(settings, detached=False)  # dies with this process if it is killed
    registry = Registry(state.url)
    configure(registry)
    yield registry
    configure(None)
    service.stop(settings)


@pytest.fixture(scope="session")
def spark(streamjoin_home):
    from streamjoin.spark.session import get_spark

    session = get_spark(app_name="streamjoin-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_connect(streamjoin_home):
    """The shared Spark Connect server (`.url`, `.log_path`), stopped at the end of the session."""
    from streamjoin.settings import Settings
    from streamjoin.spark import connect_server

    settings = Settings.from_env()
    yield connect_server.start(settings, detached=False)
    connect_server.stop(settings)


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory):
    from streamjoin.kafka.cluster import LoopbackCluster

    cluster = LoopbackCluster(tmp_path_factory.mktemp("kafka-cluster"))
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def tmp_delta_root(tmp_path) -> Path:
    root = tmp_path / "delta"
    root.mkdir()
    return root


@pytest.fixture
def unique_topic(request) -> str:
    """A Kafka-legal topic name derived from the test name, unique within the session."""
    name = re.sub(r"[^a-zA-Z0-9._-]+", "-", request.node.name)[:80].strip("-")
    return f"{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def conformance_dir() -> Path:
    return CONFORMANCE
