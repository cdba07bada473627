"""A result its topic will not take becomes a dead letter naming its size and the topic's limit
(`max.message.bytes`, read from the broker), and the query goes on: the records around it come
out, the other bad records reach the dead letters, and a later run continues. A dead letter too
large for the dead-letter topic keeps its coordinates and reason without its bytes. Through the
product's path (`Engine.run`: Kafka → Spark → Kafka + Delta)."""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.delta.tables import read_delta_arrow
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from streamjoin.settings import Settings

pytestmark = pytest.mark.integration

SOURCES = """-- dialect: ksqldb
CREATE STREAM clicks (id STRING KEY, page STRING) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);
"""
QUERY = "-- dialect: ksqldb\nCREATE STREAM {name} AS SELECT id, page FROM clicks EMIT CHANGES;\n"
LIMIT = 50_000  # the output topic's max.message.bytes
HUGE = 1_100_000  # an input record past Kafka's default limit, which the dead-letter topic keeps


def click(key: str, page: str, ts: int) -> OutRecord:
    return OutRecord(key.encode(), json.dumps({"page": page}).encode(), ts)


def test_a_result_too_large_for_its_topic_is_a_dead_letter_and_the_query_goes_on(spark, kafka_bootstrap, tmp_path,
                                                                                unique_topic):
    name = "big_" + unique_topic[-8:]
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "sources.sql").write_text(SOURCES.format(topic=unique_topic))
    (tmp_path / "sql" / f"{name}.sql").write_text(QUERY.format(name=name))
    engine = Engine(Settings.from_env(), spark)
    query = load_project(tmp_path / "sql").query(name)
    (partitions,) = {n for sub in query.compiled for topic, n in sub.topic_partitions().items()
                     if topic == query.output_topic}
    client = AdminClient({"bootstrap.servers": kafka_bootstrap})
    for created in client.create_topics(  # the input topic takes the huge record, the output topic less
            [NewTopic(query.output_topic, partitions, 1, config={"max.message.bytes": str(LIMIT)}),
             NewTopic(unique_topic, 1, 1, config={"max.message.bytes": str(2 * HUGE)})]).values():
        created.result(10)
    admin.produce(kafka_bootstrap, unique_topic, [
        click("a", "small", 1000), click("b", "x" * (2 * LIMIT), 2000), click("c", "small too", 3000),
        OutRecord(b"d", b"{" + b"y" * HUGE, 4000)])  # not JSON, and too large to keep as a dead letter

    first = engine.run(query)
    admin.produce(kafka_bootstrap, unique_topic, [click("e", "later", 5000)])
    second = engine.run(query)

    assert (first.output_rows, first.dead_letters, second.output_rows, second.dead_letters) == (2, 2, 1, 0)
    output = [json.loads(r.value)["PAGE"] for r in admin.read_all(kafka_bootstrap, query.output_topic)]
    assert output == ["small", "small too", "later"]
    assert sorted(r["ID"] for r in read_delta_arrow(engine.delta_path(query)).to_pylist()) == ["a", "c", "e"]
    dead = {json.loads(r.value)["offset"]: json.loads(r.value)
            for r in admin.read_all(kafka_bootstrap, engine.dead_letter_topic(query))}
    assert sorted(dead) == [1, 3]
    assert dead[1]["reason"].startswith("result of ") and f"over the {LIMIT} bytes topic" in dead[1]["reason"]
    assert (dead[1]["value"], dead[3]["value"], dead[3]["key"]) == (None, None, None)
    assert "not valid JSON" in dead[3]["reason"] and "left out" in dead[3]["reason"]
