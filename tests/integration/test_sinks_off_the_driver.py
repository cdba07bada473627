"""A query with Kafka and Delta outputs writes both from Spark's executors: its results never
reach the driver, and the guarantee that Kafka and Delta hold the same results holds although
they never meet there (issue 34).

- The figure: `RunReport.driver_rows` counts every row the driver took from the batches (the
  batch writer's only collect: one figures row per task and batch, `query.task_figures`);
  with 2 tasks and 400 results it stays at most 2 a batch while the outputs hold all 400.
- A result the Delta table cannot take (BIGINT overflow) is in neither sink.
- A crash between the two writes (the tasks committed their Kafka transactions, the Delta commit
  failed): the run fails; the next one replays the batch, whose tasks find their transactions
  committed and produce nothing again (the session broker is Apache Kafka: exactly-once,
  `kafka.transactions`), and Delta gets the batch once.
"""

from __future__ import annotations

import json
import shutil

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.delta.tables import read_delta_arrow
from streamjoin.kafka.admin import create_topics, produce, read_all
from streamjoin.kafka.records import REPLAY_HEADER, OutRecord
from streamjoin.settings import Settings
from streamjoin.spark.query import QueryFailed

pytestmark = pytest.mark.integration

SOURCES = """-- dialect: ksqldb
CREATE STREAM orders (id STRING KEY, amount BIGINT) WITH (kafka_topic='{topic}', value_format='JSON', partitions=2);
"""
QUERY = ("-- dialect: ksqldb\nCREATE STREAM {name} AS SELECT id, amount * 100000000000000000 AS big FROM orders "
         "EMIT CHANGES;\n")
RESULTS = 400


def project(tmp_path, topic: str, name: str):
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "sources.sql").write_text(SOURCES.format(topic=topic))
    (tmp_path / "sql" / f"{name}.sql").write_text(QUERY.format(name=name))
    return load_project(tmp_path / "sql").query(name)


def orders(count: int, overflowing: str | None = None) -> list[OutRecord]:
    """`count` orders over both partitions; the one keyed `overflowing` overflows BIGINT once
    multiplied by 10^17 (it encodes as JSON, but neither the table nor the topic may hold it)."""
    return [OutRecord(f"o{n}".encode(), json.dumps({"amount": 1000 if f"o{n}" == overflowing else n % 90}).encode(),
                      1000 + n, partition=n % 2) for n in range(count)]


def test_the_driver_takes_no_result_rows(spark, kafka_bootstrap, tmp_path, unique_topic):
    name = "off_" + unique_topic[-8:]
    query = project(tmp_path, unique_topic, name)
    create_topics(kafka_bootstrap, {unique_topic: 2})
    produce(kafka_bootstrap, unique_topic, orders(RESULTS + 1, overflowing=f"o{RESULTS}"))
    engine = Engine(Settings.from_env(), spark)

    report = engine.run(query)

    assert (report.input_rows, report.output_rows, report.dead_letters) == (RESULTS + 1, RESULTS, 1)
    assert 0 < report.driver_rows <= 2 * report.batches  # one figures row per task and batch
    in_kafka = {r.key: json.loads(r.value)["BIG"] for r in read_all(kafka_bootstrap, query.output_topic)}
    in_delta = {r["ID"].encode(): r["BIG"] for r in read_delta_arrow(engine.delta_path(query)).to_pylist()}
    assert in_kafka == in_delta and len(in_kafka) == RESULTS
    [letter] = read_delta_arrow(engine.dead_letter_path(query)).to_pylist()
    assert letter["key"] == f"o{RESULTS}".encode() and "BIGINT" in letter["reason"]


def test_a_crash_between_the_kafka_and_the_delta_write_replays_into_both_once(spark, kafka_bootstrap, tmp_path,
                                                                              unique_topic):
    name = "crash_" + unique_topic[-8:]
    query = project(tmp_path, unique_topic, name)
    create_topics(kafka_bootstrap, {unique_topic: 2})
    produce(kafka_bootstrap, unique_topic, orders(20))
    engine = Engine(Settings.from_env(), spark)
    table = engine.delta_path(query)
    engine.settings.delta_root.mkdir(parents=True, exist_ok=True)
    with open(table, "w") as blocker:  # a file where the table's folder goes: the Delta commit fails
        blocker.write("not a table")

    with pytest.raises(QueryFailed):
        engine.run(query)
    produced = read_all(kafka_bootstrap, query.output_topic)
    assert len(produced) == 20  # the tasks produced before the Delta write failed

    shutil.os.remove(table)
    replayed = engine.run(query)

    records = read_all(kafka_bootstrap, query.output_topic)  # read_committed
    assert len(records) == 20 and replayed.output_rows == 20  # the batch replayed, nothing produced again
    assert [r.header(REPLAY_HEADER) for r in records] == [r.header(REPLAY_HEADER) for r in produced]
    unique = {r.key: json.loads(r.value)["BIG"] for r in records}
    in_delta = {r["ID"].encode(): r["BIG"] for r in read_delta_arrow(table).to_pylist()}
    assert unique == in_delta and len(read_delta_arrow(table)) == 20
