"""A broker outage is one line naming the bootstrap servers, within the configured timeout, before
any Spark query starts (no broker and no Spark in this test: the engine stops before either)."""

import time

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.kafka.client import KafkaUnreachable
from streamjoin.settings import Settings
from tests.paths import REPO


def test_an_unreachable_broker_is_one_line_naming_it(tmp_path):
    engine = Engine(Settings(kafka_bootstrap="127.0.0.1:1", home=tmp_path, kafka_timeout_s=1.0),
                    spark=lambda: pytest.fail("no Spark session may be started"))
    query = load_project(REPO / "sql").query("pageviews_enriched")
    started = time.monotonic()
    with pytest.raises(KafkaUnreachable) as raised:
        engine.run(query)
    assert time.monotonic() - started < 5
    message = str(raised.value)
    assert "\n" not in message and "cannot reach the Kafka brokers at 127.0.0.1:1" in message
    with pytest.raises(KafkaUnreachable):
        engine.consumer_lag(query)
