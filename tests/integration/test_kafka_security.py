"""SASL on Apache Kafka: an embedded broker started with the configured credentials (its client
listener SASL_PLAINTEXT, mechanisms PLAIN and SCRAM-SHA-512, one user) takes the right ones for
admin, produce and read; the wrong password is one line naming the mechanism, user and servers,
told as soon as the broker refuses it (well within the timeout, not after it), before any Spark
query starts; the password is in no message and not in the broker's log. A Flink table's own
`'properties.sasl.*'` log its query in where the engine's settings name the brokers only."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.kafka import admin, embedded
from streamjoin.kafka.client import KafkaAuthenticationFailed, check_reachable
from streamjoin.kafka.records import OutRecord
from streamjoin.settings import BrokerKind, Settings
from tests.paths import REPO

pytestmark = pytest.mark.integration

PASSWORD = "s3cret-pw"
TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    """(settings with the right credentials, the broker's state)."""
    settings = Settings(home=tmp_path_factory.mktemp("sasl"), broker_kind=BrokerKind.KAFKA,
                        security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="alice",
                        sasl_password=PASSWORD, kafka_timeout_s=TIMEOUT_S)
    state = embedded.start(settings, detached=False)
    yield replace(settings, kafka_bootstrap=state.bootstrap), state
    embedded.stop(settings)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_the_right_credentials_pass(secured, mechanism, unique_topic):
    settings = replace(secured[0], sasl_mechanism=mechanism)
    bootstrap = settings.kafka_bootstrap
    check_reachable(settings, bootstrap)
    admin.create_topics(bootstrap, {unique_topic: 2}, settings)
    sent = admin.produce(bootstrap, unique_topic, [OutRecord(b"k%d" % n, b"v%d" % n) for n in range(10)], settings)
    assert sent == 10
    assert sorted(record.value for record in admin.read_all(bootstrap, unique_topic, settings)) == \
        sorted(b"v%d" % n for n in range(10))


@dataclass
class Case:
    mechanism: str
    username: str


@pytest.mark.parametrize("case", [Case("PLAIN", "alice"), Case("SCRAM-SHA-512", "alice"), Case("PLAIN", "mallory")],
                         ids=["plain", "scram", "unknown-user"])
def test_wrong_credentials_are_one_line_naming_mechanism_and_servers(secured, case):
    settings = replace(secured[0], sasl_mechanism=case.mechanism, sasl_username=case.username,
                       sasl_password="not-the-password")
    started = time.monotonic()
    with pytest.raises(KafkaAuthenticationFailed) as raised:
        check_reachable(settings, settings.kafka_bootstrap)
    assert time.monotonic() - started < TIMEOUT_S / 2, "told when refused, not after the whole timeout"
    message = str(raised.value)
    assert "\n" not in message
    assert f"{case.mechanism} authentication as user '{case.username}' failed" in message
    assert settings.kafka_bootstrap in message
    assert "not-the-password" not in message and PASSWORD not in message


def test_a_run_with_the_wrong_password_stops_before_spark(secured, tmp_path):
    settings = replace(secured[0], home=tmp_path, sasl_password="not-the-password")
    engine = Engine(settings, spark=lambda: pytest.fail("no Spark session may be started"))
    with pytest.raises(KafkaAuthenticationFailed):
        engine.run(load_project(REPO / "sql").query("pageviews_enriched"))
    assert PASSWORD not in open(secured[1].log_path).read(), "the broker's log holds no password"


def test_a_tables_sasl_properties_log_its_query_in(secured, spark, tmp_path, unique_topic):
    """Credentials given only by the table (Kafka's `sasl.jaas.config`, SCRAM): the run's topic
    administration, offset lookups, Spark source and sink producer all log in with them, or the
    run would fail; the password shows in no EXPLAIN."""
    settings = secured[0]
    admin.create_topics(settings.kafka_bootstrap, {unique_topic: 1}, settings)
    admin.produce(settings.kafka_bootstrap, unique_topic, [
        OutRecord(b"p%d" % n, json.dumps({"id": f"p{n}", "price": n}).encode()) for n in range(10)], settings)
    jaas = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="alice" password="{PASSWORD}";'
    folder = tmp_path / "sql"
    folder.mkdir()
    (folder / "sources.sql").write_text(
        f"-- dialect: flink\nCREATE TABLE products (id STRING, price INT) WITH ('connector' = 'kafka', "
        f"'topic' = '{unique_topic}', 'value.format' = 'json', 'properties.security.protocol' = 'SASL_PLAINTEXT', "
        f"'properties.sasl.mechanism' = 'SCRAM-SHA-512', 'properties.sasl.jaas.config' = '{jaas}', "
        "'properties.client.id' = 'prices-reader');\n")
    (folder / "prices.sql").write_text("-- dialect: flink\nSELECT id, price FROM products WHERE price >= 5;\n")
    query = load_project(folder).query("prices")
    brokers_only = Settings(kafka_bootstrap=settings.kafka_bootstrap, home=tmp_path / "home", kafka_timeout_s=TIMEOUT_S)
    report = Engine(brokers_only, spark).run(query)
    assert report.input_rows == 10
    written = admin.read_all(settings.kafka_bootstrap, query.output_topic, settings)
    assert sorted(json.loads(record.value)["price"] for record in written) == [5, 6, 7, 8, 9]
    assert PASSWORD not in query.explain
