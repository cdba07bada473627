"""Exactly-once to Kafka through the product's path (`Engine.run`: Kafka → Spark → each task's
results in one Kafka transaction with its marker → the output topic, and Delta) on Apache Kafka
(issue 35 item 2). A run is killed between the Kafka commit and Spark's: the transactions of a
batch committed, Spark's `commits/<batch>` file was never written (removed here, as the kill
leaves it). The next run replays that batch; its tasks find their markers and produce nothing
again: read `read_committed`, the output topic holds every result once, and so does Delta.

    run 1: batch 0 (CLICKS records)  -> tasks commit results + markers -> Spark commits batch 0
           commits/0 removed          (the kill between the two commits)
    run 2: batch 0 replayed           -> markers say committed: nothing produced; Delta skips it
           batch 1 (MORE new records) -> produced and committed as usual
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from streamjoin.kafka.transactions import marker_topic
from streamjoin.settings import Settings
from tests.integration.cli_runs import delta_rows

pytestmark = pytest.mark.integration

SOURCES = """-- dialect: ksqldb
CREATE STREAM clicks (id STRING KEY, n INT) WITH (kafka_topic='{topic}', value_format='JSON', partitions=2);
"""
QUERY = "-- dialect: ksqldb\nCREATE STREAM {name} WITH (kafka_topic='{out}') AS SELECT id, n FROM clicks EMIT CHANGES;\n"
CLICKS, MORE = 40, 10


@dataclass(frozen=True)
class Case:
    """`lost_commits`: the batches whose Spark commit the kill lost (their Kafka ones stand)."""

    name: str
    lost_commits: tuple[int, ...]
    more: int  # records produced before the second run


CASES = [Case("kill after the Kafka commit, before Spark's", (0,), 0),
         Case("the same, with new records behind it", (0,), MORE)]


def clicks(bootstrap: str, topic: str, first: int, count: int) -> None:
    admin.produce(bootstrap, topic, [OutRecord(b"u%d" % i, json.dumps({"n": i}).encode(), 1000 + i)
                                     for i in range(first, first + count)])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_batch_replayed_after_its_kafka_commit_is_not_produced_again(spark, kafka_bootstrap, unique_topic,
                                                                        tmp_path, case):
    engine = Engine(Settings.from_env(), spark)
    name, out = f"q_{unique_topic[-8:]}", f"{unique_topic}-out"
    (tmp_path / "sources.sql").write_text(SOURCES.format(topic=unique_topic))
    (tmp_path / f"{name}.sql").write_text(QUERY.format(name=name, out=out))
    query = load_project(tmp_path).query(name)
    admin.create_topics(kafka_bootstrap, {unique_topic: 2})
    clicks(kafka_bootstrap, unique_topic, 0, CLICKS)
    assert engine.output_notice(query).startswith(f"{name}: Kafka output is exactly-once")

    assert engine.run(query).output_rows == CLICKS
    (step,) = query.compiled
    for batch in case.lost_commits:
        (engine.checkpoint_root(query) / step.name / "commits" / str(batch)).unlink()
    clicks(kafka_bootstrap, unique_topic, CLICKS, case.more)
    second = engine.run(query)

    written = admin.read_all(kafka_bootstrap, out)  # read_committed: librdkafka's default
    values = sorted(json.loads(record.value)["N"] for record in written)
    table = sorted(row["N"] for row in delta_rows(engine.delta_path(query)))
    expected = list(range(CLICKS + case.more))
    assert (values, table) == (expected, expected), f"{len(values)} read, {len(table)} in Delta"
    markers = admin.read_all(kafka_bootstrap, marker_topic(name, step.name))
    assert markers and second.input_rows == CLICKS + case.more
    print(f"{case.name}: {CLICKS} + {case.more} records, the first batch replayed: {len(values)} results read "
          f"read_committed (0 duplicated), Delta {len(table)} rows; {len(markers)} task markers")
