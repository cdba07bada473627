"""A Flink table's client properties as planned (plan.client_properties): kept with Kafka's names,
the security values upper case, the ones read elsewhere (bootstrap servers, group-offsets' group
and reset) left out; a query's properties are those of all its tables, which may repeat a
property with the same value; the table an INSERT INTO writes is one of them. Refusals and
conflicts, with their positions, are in bad_sql.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.plan import plan_program
from streamjoin.plan.client_properties import query_bootstrap, query_client_properties


@dataclass(frozen=True)
class Case:
    options: tuple[str, str]  # the WITH options of tables a and b
    expected: dict[str, str]  # the query's client properties
    bootstrap: str | None = None  # the cluster the query runs on (None: the engine's)


JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'
CASES = {
    "none": Case(("", ""), {}),
    "one table's, Kafka's names": Case(("'properties.fetch.max.wait.ms' = '250', 'properties.client.id' = 'x'", ""),
                                       {"fetch.max.wait.ms": "250", "client.id": "x"}),
    "security values upper case": Case(
        ("'properties.security.protocol' = 'sasl_ssl', 'properties.sasl.mechanism' = 'plain', "
         f"'properties.sasl.jaas.config' = '{JAAS}'", ""),
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.jaas.config": JAAS}),
    "read elsewhere, not passed": Case(
        ("'properties.bootstrap.servers' = 'k:9092', 'properties.group.id' = 'g', "
         "'properties.auto.offset.reset' = 'earliest'", ""), {}),
    # Accepted, and not client properties: the engine's sink does what they ask (exactly-once
    # where the brokers honour transactions).
    "sink options": Case(("'sink.delivery-guarantee' = 'exactly-once', 'sink.partitioner' = 'default'",
                          "'sink.delivery-guarantee' = 'at-least-once'"), {}),
    "both tables, the same value": Case(("'properties.client.id' = 'x'", "'properties.client.id' = 'x', "
                                         "'properties.check.crcs' = 'true'"), {"client.id": "x", "check.crcs": "true"}),
}

TARGETS = {  # b is the table the query writes (INSERT INTO)
    "the target's writer property": Case(("", "'properties.compression.type' = 'gzip'"), {"compression.type": "gzip"}),
    "source's and target's together": Case(
        ("'properties.fetch.max.wait.ms' = '250'", "'properties.compression.type' = 'gzip', 'properties.client.id' = 'x'"),
        {"fetch.max.wait.ms": "250", "compression.type": "gzip", "client.id": "x"}),
    "a shared one, the same value": Case(("'properties.client.id' = 'x'", "'properties.client.id' = 'x'"),
                                         {"client.id": "x"}),
    "the target's cluster, the sources naming none": Case(("", "'properties.bootstrap.servers' = 'k:9092'"), {},
                                                          "k:9092"),
    "the same cluster": Case(("'properties.bootstrap.servers' = 'k:9092'", "'properties.bootstrap.servers' = 'k:9092'"),
                             {}, "k:9092"),
    # where the query writes, its sink does what they ask; they are no client properties
    "sink options": Case(("", "'sink.delivery-guarantee' = 'exactly-once', 'sink.partitioner' = 'default'"), {}),
}


def planned_sink(options: tuple[str, str], query: str):
    a, b = (f", {given}" if given else "" for given in options)
    program = plan_program(f"CREATE TABLE a (id INT) WITH ('topic' = 'a'{a});\n"
                           f"CREATE TABLE b (id INT) WITH ('topic' = 'b'{b});\n{query}", dialect="flink")
    [planned] = program.queries
    return planned.sink


@pytest.mark.parametrize("name", CASES)
def test_a_querys_client_properties(name):
    sink = planned_sink(CASES[name].options, "SELECT a.id FROM a JOIN b ON a.id = b.id;")
    assert query_client_properties([sink]) == CASES[name].expected


@pytest.mark.parametrize("name", TARGETS)
def test_the_target_tables_client_properties(name):
    case = TARGETS[name]
    sink = planned_sink(case.options, "INSERT INTO b SELECT id FROM a;")
    assert (query_client_properties([sink]), query_bootstrap(sink)) == (case.expected, case.bootstrap)


CREATED = {  # CREATE TABLE c WITH (<options>) AS SELECT id FROM a: c's options, read as a declaration's
    "its topic and writer property": (("'topic' = 'c_topic', 'properties.compression.type' = 'gzip'", ""),
                                      "c_topic", {"compression.type": "gzip"}),
    "no options: topic of its name": (("", ""), "c", {}),
}


@pytest.mark.parametrize("name", CREATED)
def test_a_created_tables_connector_options(name):
    (options, _), topic, expected = CREATED[name]
    given = f" WITH ({options})" if options else ""
    program = plan_program(f"CREATE TABLE a (id INT) WITH ('topic' = 'a');\n"
                           f"CREATE TABLE c{given} AS SELECT id FROM a;\nSELECT id FROM c;", dialect="flink")
    created, reading = program.queries
    assert (created.sink.topic, query_client_properties([created.sink])) == (topic, expected)
    assert query_client_properties([reading.sink]) == expected  # a query reading c uses c's clients
