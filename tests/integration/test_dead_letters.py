"""Bad records become dead letters (topic + Delta table) while the good ones flow on, through the
product's one path: a query run by `Engine.run`, whose tasks reject what they cannot decode,
produce those rows to `<query>-dead-letters` and hand them to delta-spark for its table."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.delta.tables import read_delta_arrow
from streamjoin.kafka.admin import create_topics, produce, read_all
from streamjoin.kafka.records import OutRecord
from streamjoin.settings import Settings

pytestmark = pytest.mark.integration

SOURCES = """-- dialect: ksqldb
CREATE STREAM orders (id STRING KEY, amount INT) WITH (kafka_topic='{topic}', value_format='JSON', partitions=2);
"""
QUERY = "-- dialect: ksqldb\nCREATE STREAM {name} AS SELECT id, amount FROM orders EMIT CHANGES;\n"


@dataclass(frozen=True)
class Case:
    inputs: tuple  # (partition, key, value, record ts)
    expected: str | tuple  # a dead-letter reason fragment, or the output row (ID, AMOUNT)


# Per partition the offsets are the arrival positions: p0 = a@0, b@1; p1 = c@0, e@1.
CASES = [
    Case((0, b"a", b'{"amount": 1}', 1000), ("a", 1)),
    Case((0, b"b", b'{"amount": ', 2000), "value: not valid JSON"),
    # ksqlDB folds the unquoted column name `amount` to AMOUNT
    Case((1, b"c", b'{"amount": "x"}', 3000), "column value.AMOUNT: cannot read 'x' as INT"),
    Case((1, b"e", b'{"AMOUNT": 5}', 5000), ("e", 5)),  # JSON fields match columns case-insensitively
]


def offsets_of(cases: list[Case]) -> list[int]:
    seen: dict[int, int] = {}
    result = []
    for case in cases:
        partition = case.inputs[0]
        result.append(seen.get(partition, 0))
        seen[partition] = result[-1] + 1
    return result


def test_malformed_records_land_in_dead_letters_while_good_records_flow(
        spark, kafka_bootstrap, tmp_path, unique_topic) -> None:
    topic, name = unique_topic, "orders_" + unique_topic[-8:]
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "sources.sql").write_text(SOURCES.format(topic=topic))
    (tmp_path / "sql" / f"{name}.sql").write_text(QUERY.format(name=name))
    create_topics(kafka_bootstrap, {topic: 2})
    produce(kafka_bootstrap, topic, [OutRecord(key=k, value=v, timestamp_ms=ts, partition=p)
                                     for p, k, v, ts in (c.inputs for c in CASES)])
    engine = Engine(Settings.from_env(), spark)
    query = load_project(tmp_path / "sql").query(name)

    report = engine.run(query)  # bad records never fail the query

    good = [c.expected for c in CASES if isinstance(c.expected, tuple)]
    output = read_delta_arrow(engine.delta_path(query)).to_pylist()
    assert sorted((r["ID"], r["AMOUNT"]) for r in output) == sorted(good)
    offsets = offsets_of(CASES)
    expected_dead = sorted((topic, c.inputs[0], off, c.inputs[3], c.inputs[1], c.inputs[2], name)
                           for c, off in zip(CASES, offsets) if isinstance(c.expected, str))
    assert report.dead_letters == len(expected_dead)

    dead_path = engine.delta_path(query) + "-dead-letters"
    reasons = {c.inputs[1]: c.expected for c in CASES if isinstance(c.expected, str)}
    dead_table = read_delta_arrow(dead_path).to_pylist()
    assert sorted((r["source_topic"], r["partition"], r["offset"], r["timestamp"], r["key"], r["value"], r["query"])
                  for r in dead_table) == expected_dead
    assert all(reasons[r["key"]] in r["reason"] for r in dead_table)

    # The dead-letter topic carries the same letters as JSON, raw bytes in base64.
    dead_topic = engine.dead_letter_topic(query)
    letters = [json.loads(r.value) for r in read_all(kafka_bootstrap, dead_topic)]
    assert sorted((x["source_topic"], x["partition"], x["offset"], x["timestamp"], base64.b64decode(x["key"]),
                   base64.b64decode(x["value"]), x["query"]) for x in letters) == expected_dead

    # A later run reads nothing new: nothing is written to either again.
    again = engine.run(query)
    assert (again.input_rows, again.dead_letters) == (0, 0)
    assert len(read_all(kafka_bootstrap, dead_topic)) == len(expected_dead)
    assert read_delta_arrow(dead_path).num_rows == len(expected_dead)


def test_a_result_out_of_range_is_a_dead_letter_and_kafka_and_delta_agree(spark, kafka_bootstrap, tmp_path, unique_topic):
    """1000 * 10^17 does not fit BIGINT (ksqlDB and Flink would wrap it around silently): that
    result is a dead letter; the other is in the topic and the table alike, and a rerun writes
    neither again."""
    topic, name = unique_topic, "big_" + unique_topic[-8:]
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "sources.sql").write_text(SOURCES.format(topic=topic))
    (tmp_path / "sql" / f"{name}.sql").write_text(
        f"-- dialect: ksqldb\nCREATE STREAM {name} AS SELECT id, amount * 100000000000000000 AS big FROM orders "
        "EMIT CHANGES;\n")
    create_topics(kafka_bootstrap, {topic: 2})
    produce(kafka_bootstrap, topic, [OutRecord(b"a", b'{"amount": 1000}', 1000, partition=0),
                                     OutRecord(b"b", b'{"amount": 1}', 2000, partition=0)])
    engine = Engine(Settings.from_env(), spark)
    query = load_project(tmp_path / "sql").query(name)

    report = engine.run(query)
    again = engine.run(query)

    assert (report.output_rows, report.dead_letters, again.output_rows) == (1, 1, 0)
    in_kafka = [json.loads(r.value) for r in read_all(kafka_bootstrap, query.output_topic)]
    in_delta = read_delta_arrow(engine.delta_path(query)).to_pylist()
    assert in_kafka == [{"BIG": 10**17}] and [r["BIG"] for r in in_delta] == [10**17]
    [letter] = read_delta_arrow(engine.delta_path(query) + "-dead-letters").to_pylist()
    assert (letter["key"], letter["offset"]) == (b"a", 0) and "out of range for BIGINT" in letter["reason"]
