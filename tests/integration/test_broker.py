"""Embedded broker lifecycle, for both kinds (Apache Kafka, Tansu), on a second broker with its own
STREAMJOIN_HOME (the session broker must stay up for the other tests)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from streamjoin.kafka import admin
from streamjoin.kafka import embedded as broker
from streamjoin.kafka import kraft
from streamjoin.settings import BrokerKind, Settings

pytestmark = pytest.mark.integration

DESCRIPTIONS = {BrokerKind.KAFKA: f"Apache Kafka {kraft.VERSION} (KRaft)", BrokerKind.TANSU: "Tansu 0.6"}


@pytest.mark.parametrize("kind", list(BrokerKind), ids=lambda kind: kind.value)
def test_start_status_answers_stop(tmp_path, kind):
    settings = Settings(home=tmp_path, broker_kind=kind)
    assert broker.status(settings) is None

    state = broker.start(settings)
    assert (state.kind, state.description) == (kind, DESCRIPTIONS[kind])
    assert broker.status(settings) == state
    assert broker.answers(state.bootstrap)
    assert broker.start(settings) == state, "a second start reuses the running broker"
    assert broker.ensure_bootstrap(settings) == state.bootstrap
    admin.create_topics(state.bootstrap, {"lifecycle": 2})
    assert admin.partition_counts(state.bootstrap, ["lifecycle"]) == {"lifecycle": 2}

    assert broker.stop(settings) is True
    assert broker.status(settings) is None
    assert not broker.answers(state.bootstrap, timeout_s=0.5)
    assert broker.stop(settings) is False, "stopping twice is a no-op"


def test_configured_bootstrap_wins_over_embedded(tmp_path):
    settings = Settings(kafka_bootstrap="kafka-1:9092,kafka-2:9092", home=tmp_path)
    assert broker.ensure_bootstrap(settings) == "kafka-1:9092,kafka-2:9092"
    assert broker.status(settings) is None, "no embedded broker is started"


def test_kafka_keeps_its_log_across_a_restart(tmp_path):
    """Apache Kafka's log is on disk (Tansu's is in memory): a topic outlives a stop and start."""
    settings = Settings(home=tmp_path, broker_kind=BrokerKind.KAFKA)
    first = broker.start(settings)
    admin.create_topics(first.bootstrap, {"kept": 3})
    broker.stop(settings)
    second = broker.start(settings)
    try:
        assert admin.partition_counts(second.bootstrap, ["kept"]) == {"kept": 3}
    finally:
        broker.stop(settings)


def test_cli_started_broker_outlives_the_cli(tmp_path):
    env = {**os.environ, "STREAMJOIN_HOME": str(tmp_path)}
    env.pop("STREAMJOIN_KAFKA_BOOTSTRAP", None)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streamjoin", "broker", *args],
                              env=env, capture_output=True, text=True, timeout=180)

    started = cli("start", "--kind", "kafka")
    assert started.returncode == 0, started.stderr
    try:
        # The CLI process has exited; the broker it started must still answer, and say what it is.
        status = cli("status")
        assert status.returncode == 0 and "answering" in status.stdout, status.stdout
        assert DESCRIPTIONS[BrokerKind.KAFKA] in status.stdout
    finally:
        stopped = cli("stop")
    assert "broker stopped" in stopped.stdout
    assert cli("status").returncode == 1
