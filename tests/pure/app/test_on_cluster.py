"""A Flink table's `'properties.bootstrap.servers'` is the cluster its query runs on: the engine
hands a query whose tables name another cluster to an engine on that cluster (sharing its Spark),
and keeps a query that names none, or its own, on the project's; the table a query writes (INSERT
INTO) counts as one of its tables. Its other `'properties.*'` reach the clients of the query's run: the Spark source's options (`kafka.<name>`, as Spark's Kafka
connector takes them) and the librdkafka configuration on the driver and in the workers, under
librdkafka's names; its security properties win over the engine's settings. No broker is asked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.kafka.client import client_config_from_options, rdkafka_config
from streamjoin.settings import Settings

PROJECT = "project-kafka:9092"
CASES = {  # the table's option -> the servers its query runs on
    "the Flink document's localhost:9092": ("'properties.bootstrap.servers' = 'localhost:9092', ", "localhost:9092"),
    "the project's own servers": (f"'properties.bootstrap.servers' = '{PROJECT}', ", PROJECT),
    "no option": ("", PROJECT),
    "a list, spaces dropped": ("'properties.bootstrap.servers' = 'a:9092, b:9092', ", "a:9092,b:9092"),
}


@pytest.mark.parametrize("name", CASES)
def test_the_cluster_a_query_runs_on(name, tmp_path: Path):
    option, servers = CASES[name]
    (tmp_path / "flink").mkdir()
    (tmp_path / "flink" / "sources.sql").write_text(
        f"CREATE TABLE products (id STRING, price INT) WITH ('connector' = 'kafka', 'topic' = 'products', {option}"
        "'value.format' = 'json');\n")
    (tmp_path / "flink" / "prices.sql").write_text("SELECT id, price FROM products;\n")
    query = load_project(tmp_path).query("prices")
    spark = object()
    engine = Engine(Settings(kafka_bootstrap=PROJECT, home=tmp_path), spark)
    chosen = engine.on_cluster(query)
    assert chosen.bootstrap == servers
    assert (chosen is engine) == (servers == PROJECT)
    assert chosen.spark is spark


@dataclass(frozen=True)
class Case:
    options: str  # the table's client properties, as written in its WITH (...)
    spark: dict[str, str]  # in the Spark source options of its query's run
    rdkafka: dict[str, str]  # in the librdkafka configuration of the run's clients (driver and workers)


SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"bob\" password=\"p \\\"w\\\"\";"
PROPERTIES = {
    "client.id reaches every client": Case(
        "'properties.client.id' = 'prices-reader'", {"kafka.client.id": "prices-reader"}, {"client.id": "prices-reader"}),
    "Kafka's fetch.max.wait.ms is librdkafka's fetch.wait.max.ms": Case(
        "'properties.fetch.max.wait.ms' = '250'", {"kafka.fetch.max.wait.ms": "250"}, {"fetch.wait.max.ms": "250"}),
    "SCRAM credentials of sasl.jaas.config win over the settings' PLAIN login": Case(
        f"'properties.security.protocol' = 'sasl_plaintext', 'properties.sasl.mechanism' = 'SCRAM-SHA-512', "
        f"'properties.sasl.jaas.config' = '{SCRAM}'",
        {"kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-512",
         "kafka.sasl.username": "bob", "kafka.sasl.password": 'p "w"'},
        {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "bob",
         "sasl.password": 'p "w"'}),
    "a PEM truststore is the CA file": Case(
        "'properties.ssl.truststore.location' = '/etc/ca.pem', 'properties.ssl.truststore.type' = 'PEM'",
        {"kafka.ssl.truststore.location": "/etc/ca.pem", "kafka.ssl.truststore.type": "PEM"},
        {"ssl.ca.location": "/etc/ca.pem"}),
}


@pytest.mark.parametrize("name", PROPERTIES)
def test_a_tables_client_properties_reach_its_querys_clients(name, tmp_path: Path):
    case = PROPERTIES[name]
    (tmp_path / "flink").mkdir()
    (tmp_path / "flink" / "sources.sql").write_text(
        f"CREATE TABLE products (id STRING, price INT) WITH ('topic' = 'products', {case.options});\n"
        "CREATE TABLE labels (id STRING, label STRING) WITH ('topic' = 'labels');\n")
    (tmp_path / "flink" / "prices.sql").write_text(
        "SELECT p.id, price, label FROM products p JOIN labels l ON p.id = l.id;\n")
    query = load_project(tmp_path).query("prices")
    engine = Engine(Settings(kafka_bootstrap=PROJECT, home=tmp_path, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="PLAIN", sasl_username="alice", sasl_password="pw"), object())
    chosen = engine.on_cluster(query)
    options = chosen.kafka_options()
    assert options.items() >= case.spark.items()
    assert rdkafka_config(chosen.client_config).items() >= case.rdkafka.items()
    assert rdkafka_config(client_config_from_options(options)).items() >= case.rdkafka.items(), "the Spark source's"
    assert chosen.bootstrap == PROJECT and engine.kafka_options().get("kafka.sasl.username") == "alice"


TARGETS = {  # the INSERT INTO target's options -> the servers its query runs on, in the run's librdkafka configuration
    "the target's compression.type reaches the producer": (
        "'properties.compression.type' = 'gzip'", PROJECT, {"compression.type": "gzip"}),
    "the target's servers when the sources name none": (
        "'properties.bootstrap.servers' = 'sink-kafka:9092'", "sink-kafka:9092", {"bootstrap.servers": "sink-kafka:9092"}),
}


@pytest.mark.parametrize("name", TARGETS)
def test_the_target_tables_properties_reach_the_run(name, tmp_path: Path):
    options, servers, rdkafka = TARGETS[name]
    (tmp_path / "flink").mkdir()
    (tmp_path / "flink" / "sources.sql").write_text(
        "CREATE TABLE products (id STRING, price INT) WITH ('topic' = 'products');\n"
        f"CREATE TABLE priced (id STRING, price INT) WITH ('topic' = 'priced', {options});\n")
    (tmp_path / "flink" / "prices.sql").write_text("INSERT INTO priced SELECT id, price FROM products;\n")
    chosen = Engine(Settings(kafka_bootstrap=PROJECT, home=tmp_path), object()).on_cluster(
        load_project(tmp_path).query("prices"))
    assert chosen.bootstrap == servers
    assert rdkafka_config(chosen.client_config).items() >= rdkafka.items()



QUERY_METHODS = ["run", "output_guarantee", "consumer_lag", "partition_positions", "reset", "backfill",
                 "copartitioning_problems"]


@pytest.mark.parametrize("method", QUERY_METHODS)
def test_every_query_method_is_handed_to_the_querys_engine_once(method):
    """Each Engine method that takes a query runs on the engine of that query's cluster, through
    one `on_cluster` hand-over (a second would build another engine per call)."""
    handed = getattr(Engine, method)
    assert handed.__code__.co_name == "on_cluster" and handed.__wrapped__.__code__.co_name == method


def test_a_run_runs_on_the_cluster_its_tables_name(tmp_path: Path, monkeypatch):
    (tmp_path / "flink").mkdir()
    (tmp_path / "flink" / "sources.sql").write_text(
        "CREATE TABLE products (id STRING, price INT) WITH ('topic' = 'products', "
        "'properties.bootstrap.servers' = 'other:9092');\n")
    (tmp_path / "flink" / "prices.sql").write_text("SELECT id, price FROM products;\n")
    ran_on = []
    monkeypatch.setattr(Engine, "_run", lambda self, query, *args: ran_on.append(self.bootstrap))
    Engine(Settings(kafka_bootstrap=PROJECT, home=tmp_path), object()).run(load_project(tmp_path).query("prices"))
    assert ran_on == ["other:9092"]
