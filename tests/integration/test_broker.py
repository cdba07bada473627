"""Embedded broker lifecycle, on a second broker with its own STREAMJOIN_HOME (the session broker
must stay up for the other tests)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from streamjoin.kafka import embedded as broker
from streamjoin.settings import Settings
from streamjoin.kafka import admin

pytestmark = pytest.mark.integration


def test_start_status_answers_stop(tmp_path):
    settings = Settings(home=tmp_path)
    assert broker.status(settings) is None

    state = broker.start(settings)
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


def test_cli_started_broker_outlives_the_cli(tmp_path):
    env = {**os.environ, "STREAMJOIN_HOME": str(tmp_path)}
    env.pop("STREAMJOIN_KAFKA_BOOTSTRAP", None)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streamjoin", "broker", *args],
                              env=env, capture_output=True, text=True, timeout=60)

    started = cli("start")
    assert started.returncode == 0, started.stderr
    try:
        # The CLI process has exited; the broker it started must still answer.
        status = cli("status")
        assert status.returncode == 0 and "answering" in status.stdout, status.stdout
    finally:
        stopped = cli("stop")
    assert "broker stopped" in stopped.stdout
    assert cli("status").returncode == 1
