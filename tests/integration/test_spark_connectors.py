"""Spark's own Kafka connector and delta-spark on the engine's session (their jars fetched by the
project into its jar cache, spark/connectors.py): a batch read with `format("kafka")` gives each
record's key, value, headers and coordinates; delta-spark appends, MERGEs on a key (an update, an
insert, a delete) and skips a write whose (txnAppId, txnVersion) it has committed, and delta-rs
reads the same table."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable as RustDeltaTable

from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord

pytestmark = pytest.mark.integration


def test_format_kafka_reads_records_with_headers(spark, kafka_bootstrap, unique_topic):
    admin.create_topics(kafka_bootstrap, {unique_topic: 2})
    records = [OutRecord(b"k%d" % n, b"v%d" % n, 1_000 + n, headers=(("h", b"x%d" % n),)) for n in range(6)]
    assert admin.produce(kafka_bootstrap, unique_topic, records) == 6
    rows = (spark.read.format("kafka").option("kafka.bootstrap.servers", kafka_bootstrap)
            .option("subscribe", unique_topic).option("includeHeaders", "true").load().collect())
    got = sorted((bytes(row.key), bytes(row.value), [(h.key, bytes(h.value)) for h in row.headers],
                  round(row.timestamp.timestamp() * 1000)) for row in rows)
    assert got == [(b"k%d" % n, b"v%d" % n, [("h", b"x%d" % n)], 1_000 + n) for n in range(6)]
    assert {row.partition for row in rows} == {0, 1} and {row.topic for row in rows} == {unique_topic}


def test_delta_spark_appends_merges_and_skips_a_committed_batch(spark, tmp_path):
    from delta.tables import DeltaTable

    path = str(tmp_path / "table")
    spark.createDataFrame([(1, "a"), (2, "b"), (3, "c")], "id int, v string").write.format("delta").save(path)
    changes = spark.createDataFrame([(2, "B", False), (3, None, True), (4, "d", False)], "id int, v string, gone boolean")
    (DeltaTable.forPath(spark, path).alias("t").merge(changes.alias("c"), "t.id = c.id")
     .whenMatchedDelete("c.gone").whenMatchedUpdate(set={"v": "c.v"})
     .whenNotMatchedInsert(condition="NOT c.gone", values={"id": "c.id", "v": "c.v"}).execute())

    def write_batch(version: int) -> None:  # a micro-batch's idempotent append, as foreachBatch writes one
        (spark.createDataFrame([(9, "z")], "id int, v string").write.format("delta").mode("append")
         .option("txnAppId", "query@epoch").option("txnVersion", version).save(path))

    write_batch(7)
    write_batch(7)  # replayed: already committed, skipped
    expected = [(1, "a"), (2, "B"), (4, "d"), (9, "z")]
    assert sorted(tuple(row) for row in spark.read.format("delta").load(path).collect()) == expected
    assert sorted(zip(*RustDeltaTable(path).to_pyarrow_table().to_pydict().values())) == expected
