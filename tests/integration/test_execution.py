"""A query of a small `sql/` project run the way the orchestrator runs it (`Engine.run`):
Kafka output, Delta copy, dead letters for an undecodable record, lag, restart, backfill; reading
with each Kafka source (streamjoin_kafka and Spark's own connector)."""

from __future__ import annotations

import json
import time
from dataclasses import replace

import pytest
from pyspark.sql.streaming import StreamingQueryListener

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.settings import KafkaSource, Settings
from streamjoin.delta.tables import read_delta_arrow
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord

SOURCES = """-- dialect: ksqldb
CREATE STREAM views (userid STRING KEY, page STRING) WITH (kafka_topic='{views}', value_format='JSON', partitions=1);
CREATE TABLE people (userid STRING PRIMARY KEY, name STRING) WITH (kafka_topic='{people}', value_format='JSON', partitions=1);
"""
QUERY = """-- dialect: ksqldb
CREATE STREAM {name} AS SELECT views.userid AS userid, page, name
FROM views LEFT JOIN people ON views.userid = people.userid EMIT CHANGES;
"""


def record(key: str, value, ts: int) -> OutRecord:
    return OutRecord(key.encode(), value if isinstance(value, bytes) else json.dumps(value).encode(), ts)


class SourceNames(StreamingQueryListener):
    """The description of every source a streaming query's progress names (Spark's `kafka`
    format: `KafkaV2[...]`; a Python data source such as streamjoin_kafka: `PythonMicroBatchStream...`)."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def onQueryStarted(self, event) -> None:
        """Only progress names the sources."""

    def onQueryProgress(self, event) -> None:
        self.seen.update(source.description for source in event.progress.sources)

    def onQueryIdle(self, event) -> None:
        """Only progress names the sources."""

    def onQueryTerminated(self, event) -> None:
        """Only progress names the sources."""


@pytest.mark.integration
@pytest.mark.parametrize("source, described", [(KafkaSource.STREAMJOIN, "PythonMicroBatchStream"),
                                               (KafkaSource.SPARK, "KafkaV2")])
def test_run_query_writes_kafka_and_delta_dead_letters_bad_records_and_backfills(
        tmp_path, kafka_bootstrap, spark, unique_topic, source, described):
    views, people, name = f"{unique_topic}-views", f"{unique_topic}-people", "enriched_" + unique_topic[-8:]
    (tmp_path / "sql").mkdir()
    (tmp_path / "sql" / "sources.sql").write_text(SOURCES.format(views=views, people=people))
    (tmp_path / "sql" / f"{name}.sql").write_text(QUERY.format(name=name))
    settings = replace(Settings.from_env(), kafka_source=source)
    names = SourceNames()
    spark.streams.addListener(names)
    admin.create_topics(kafka_bootstrap, {views: 1, people: 1}, settings=settings)
    admin.produce(kafka_bootstrap, people, [record("u1", {"name": "Ann"}, 1000)], settings=settings)
    admin.produce(kafka_bootstrap, views, [record("u1", {"page": "a"}, 2000), record("u2", b"{not json", 3000),
                                           record("u2", {"page": "b"}, 4000)], settings=settings)

    engine = Engine(settings, spark)
    spec = load_project(tmp_path / "sql").query(name)
    try:
        report = engine.run(spec)
        deadline = time.monotonic() + 30  # listener events arrive on their own thread, after the run
        while not names.seen and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        spark.streams.removeListener(names)
    assert any(described in seen for seen in names.seen), names.seen  # the source asked for

    # input_rows counts every record read, the one that could not be decoded too (1 + 3 records)
    assert (report.input_rows, report.output_rows, report.dead_letters) == (4, 2, 1)
    assert report.consumer_lag == 0
    assert report.watermark_ms == 4000  # stream time: the latest event time the task saw
    out = sorted((r.key, json.loads(r.value)) for r in admin.read_all(kafka_bootstrap, spec.output_topic))
    assert out == [(b"u1", {"PAGE": "a", "NAME": "Ann"}), (b"u2", {"PAGE": "b", "NAME": None})]
    dead = [json.loads(r.value) for r in admin.read_all(kafka_bootstrap, f"{name}-dead-letters")]
    assert [(d["source_topic"], d["partition"], d["offset"]) for d in dead] == [(views, 0, 1)]
    assert "JSON" in dead[0]["reason"] or "json" in dead[0]["reason"]
    table = read_delta_arrow(engine.delta_path(spec)).to_pylist()
    assert sorted((r["USERID"], r["PAGE"], r["NAME"]) for r in table) == [("u1", "a", "Ann"), ("u2", "b", None)]

    again = engine.run(spec)  # nothing new: nothing written twice
    assert (again.output_rows, len(read_delta_arrow(engine.delta_path(spec)))) == (0, 2)

    admin.produce(kafka_bootstrap, views, [record("u1", {"page": "c"}, 5000)], settings=settings)
    assert engine.consumer_lag(spec) == 1
    refill = engine.backfill(spec, 0, 4500)  # recompute [0, 4.5 s) in batch mode
    assert refill.output_rows == 2
    rows = sorted((r["USERID"], r["PAGE"]) for r in read_delta_arrow(engine.delta_path(spec)).to_pylist())
    assert rows == [("u1", "a"), ("u2", "b")]
