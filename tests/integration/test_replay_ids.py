"""Replay ids never collide between writers of one topic, through the product's path
(`Engine.run`: Kafka → Spark → the Kafka sink + Delta): two queries of two projects writing one
topic, and one query changed and run on a new checkpoint. The documented dedupe (`dedupe_replayed`) keeps every
record of both; with one writer id per topic it dropped the second writer's results as replays."""

from __future__ import annotations

import json
import shutil

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord, dedupe_replayed
from streamjoin.settings import Settings

pytestmark = pytest.mark.integration

SOURCES = """-- dialect: ksqldb
CREATE STREAM clicks (id STRING KEY, n INT) WITH (kafka_topic='{topic}', value_format='JSON', partitions=1);
"""
QUERY = ("-- dialect: ksqldb\nCREATE STREAM {name} WITH (kafka_topic='{out}') AS "
         "SELECT id, n{extra} FROM clicks EMIT CHANGES;\n")
CLICKS = 30


def project(root, topic: str, name: str, out: str, extra: str = ""):
    root.mkdir(exist_ok=True)
    (root / "sources.sql").write_text(SOURCES.format(topic=topic))
    (root / f"{name}.sql").write_text(QUERY.format(name=name, out=out, extra=extra))
    return load_project(root).query(name)


def kept(engine: Engine, out: str) -> list[dict]:
    written = sorted(admin.read_all(engine.bootstrap, out), key=lambda r: (r.partition, r.offset))
    return [json.loads(r.value) for r in dedupe_replayed(written)]


@pytest.fixture
def engine(spark, kafka_bootstrap, unique_topic) -> Engine:
    engine = Engine(Settings.from_env(), spark)
    admin.create_topics(kafka_bootstrap, {unique_topic: 1})
    admin.produce(kafka_bootstrap, unique_topic, [OutRecord(b"u%d" % i, json.dumps({"n": i}).encode(), 1000 + i)
                                                  for i in range(CLICKS)])
    return engine


def test_two_queries_writing_one_topic_keep_all_their_results(engine, tmp_path, unique_topic):
    out, tag = f"{unique_topic}-out", unique_topic[-8:]
    first = project(tmp_path / "a", unique_topic, f"first_{tag}", out)
    second = project(tmp_path / "b", unique_topic, f"second_{tag}", out, ", n * 10 AS m")
    assert engine.run(first).output_rows == engine.run(second).output_rows == CLICKS
    rows = kept(engine, out)
    assert (len(rows), sum("M" in row for row in rows)) == (2 * CLICKS, CLICKS)


def test_a_query_restarted_on_a_new_checkpoint_keeps_its_new_results(engine, tmp_path, unique_topic):
    """The query's checkpoint deleted by hand (the remedy README names besides `reset_<query>`,
    which also deletes the output topic) and the query changed: its batch numbers start at 0 again."""
    out, name = f"{unique_topic}-out", f"q_{unique_topic[-8:]}"
    assert engine.run(project(tmp_path / "sql", unique_topic, name, out)).output_rows == CLICKS
    query = project(tmp_path / "sql", unique_topic, name, out, ", n * 10 AS m")
    shutil.rmtree(engine.checkpoint_root(query))
    assert engine.run(query).output_rows == CLICKS
    rows = kept(engine, out)
    assert (len(rows), sum("M" in row for row in rows)) == (2 * CLICKS, CLICKS)
