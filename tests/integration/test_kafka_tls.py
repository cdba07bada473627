"""TLS on Apache Kafka, with a certificate the test makes (`tls.make_certificate`, the JDK's
keytool): an embedded broker whose client listener speaks SASL_SSL (and one speaking SSL alone)
takes the right credentials for admin, produce and read; a query runs over it end to end through
Spark (the source's reads and the tasks' writes on librdkafka with `ssl.ca.location`); a wrong
password is one line naming the mechanism and the servers, told well within the timeout; and no
password (SASL's or the keystore's) is in the run's report, its files (checkpoints, Delta tables,
figures), the process's output or the broker's log."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.app.samples import produce_samples
from streamjoin.kafka import admin, embedded, tls
from streamjoin.kafka.client import KafkaAuthenticationFailed, check_reachable
from streamjoin.kafka.records import OutRecord
from streamjoin.settings import BrokerKind, Settings
from tests.paths import REPO

pytestmark = pytest.mark.integration

PASSWORD = "tls-s3cret-pw"
TIMEOUT_S = 10.0


def secured_broker(home, protocol: str, **credentials):
    certificate = tls.make_certificate(home / "tls")
    settings = Settings(home=home, broker_kind=BrokerKind.KAFKA, security_protocol=protocol,
                        ssl_ca_location=str(certificate.ca_pem), kafka_timeout_s=TIMEOUT_S,
                        broker_keystore=certificate.keystore.path,
                        broker_keystore_password=certificate.keystore.password, **credentials)
    state = embedded.start(settings, detached=False)
    return replace(settings, kafka_bootstrap=state.bootstrap), state


@pytest.fixture(scope="module")
def sasl_ssl(tmp_path_factory):
    """(settings with the right credentials, the broker's state)."""
    home = tmp_path_factory.mktemp("sasl_ssl")
    settings, state = secured_broker(home, "SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_username="alice",
                                     sasl_password=PASSWORD)
    yield settings, state
    embedded.stop(settings)


def round_trip(settings: Settings, topic: str) -> list[bytes]:
    admin.create_topics(settings.kafka_bootstrap, {topic: 2}, settings)
    admin.produce(settings.kafka_bootstrap, topic, [OutRecord(b"k%d" % n, b"v%d" % n) for n in range(10)], settings)
    return sorted(record.value for record in admin.read_all(settings.kafka_bootstrap, topic, settings))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_sasl_over_tls_with_the_right_credentials(sasl_ssl, mechanism, unique_topic):
    settings = replace(sasl_ssl[0], sasl_mechanism=mechanism)
    check_reachable(settings, settings.kafka_bootstrap)
    assert round_trip(settings, unique_topic) == sorted(b"v%d" % n for n in range(10))


def test_tls_alone(tmp_path, unique_topic):
    settings, _ = secured_broker(tmp_path, "SSL")
    try:
        check_reachable(settings, settings.kafka_bootstrap)
        assert round_trip(settings, unique_topic) == sorted(b"v%d" % n for n in range(10))
    finally:
        embedded.stop(settings)


def test_a_wrong_password_over_tls_is_one_line_naming_mechanism_and_servers(sasl_ssl):
    settings = replace(sasl_ssl[0], sasl_password="not-the-password")
    started = time.monotonic()
    with pytest.raises(KafkaAuthenticationFailed) as raised:
        check_reachable(settings, settings.kafka_bootstrap)
    assert time.monotonic() - started < TIMEOUT_S / 2, "told when refused, not after the whole timeout"
    message = str(raised.value)
    assert "\n" not in message and "SASL_SSL SCRAM-SHA-512" in message and settings.kafka_bootstrap in message
    assert "not-the-password" not in message and PASSWORD not in message


def test_a_query_runs_over_tls_and_no_secret_is_left_behind(sasl_ssl, spark, tmp_path, capfd, caplog):
    settings, state = sasl_ssl
    run_settings = replace(settings, home=tmp_path)
    produce_samples(REPO / "sql", REPO / "samples", settings.kafka_bootstrap, settings)
    query = load_project(REPO / "sql").query("pageviews_enriched")
    report = Engine(run_settings, spark).run(query, mode="available_now")
    written = admin.read_all(settings.kafka_bootstrap, query.output_topic, settings)
    assert report.input_rows > 0 and report.output_rows > 0 and len(written) >= report.output_rows, report

    secrets = (PASSWORD, settings.broker_keystore_password)
    captured = capfd.readouterr()
    places = {"the report": repr(report), "stdout": captured.out, "stderr": captured.err, "the log": caplog.text,
              "the broker's log": open(state.log_path, errors="replace").read()}
    places.update({str(path): path.read_bytes().decode(errors="replace")
                   for path in tmp_path.rglob("*") if path.is_file()})
    assert len(places) > 10, "the run left its checkpoint and tables under its home"
    leaks = [where for where, text in places.items() if any(secret in text for secret in secrets)]
    assert not leaks, f"a password in {leaks}"
