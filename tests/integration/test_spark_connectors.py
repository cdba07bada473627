"""Spark's own Kafka connector and delta-spark on the engine's session (their jars fetched by the
project into its jar cache, spark/connectors.py): a batch read with `format("kafka")` gives each
record's key, value, headers and coordinates; a query's table properties reach its Java client
without clashing with the waits streamjoin sets there; delta-spark appends, MERGEs on a key (an update, an
insert, a delete) and skips a write whose (txnAppId, txnVersion) it has committed, and delta-rs
reads the same table."""

from __future__ import annotations

import json

import pytest
from deltalake import DeltaTable as RustDeltaTable

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from streamjoin.settings import KafkaSource, Settings
from tests.integration.cli_runs import write_project

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


def test_a_tables_request_timeout_past_the_broker_timeout_reaches_spark_s_connector(spark, kafka_bootstrap,
                                                                                      tmp_path, unique_topic):
    """30 s requests against a 10 s broker timeout: the offset requests' overall wait (half the
    timeout) is lengthened to the request's, which the Java admin client requires (a shorter one
    failed the query at its start)."""
    admin.create_topics(kafka_bootstrap, {unique_topic: 1})
    admin.produce(kafka_bootstrap, unique_topic, [OutRecord(b"p%d" % n, json.dumps({"id": f"p{n}", "price": n}).encode())
                                                  for n in range(10)])
    sql = write_project(tmp_path, f"-- dialect: flink\nCREATE TABLE products (id STRING, price INT) WITH ("
                        f"'connector' = 'kafka', 'topic' = '{unique_topic}', 'value.format' = 'json', "
                        "'properties.request.timeout.ms' = '30000', 'properties.isolation.level' = 'read_committed');\n",
                        {"prices": "-- dialect: flink\nSELECT id, price FROM products WHERE price >= 5;\n"})
    query = load_project(sql).query("prices")
    settings = Settings(kafka_bootstrap=kafka_bootstrap, home=tmp_path / "home", kafka_source=KafkaSource.SPARK)
    assert settings.kafka_timeout_s * 1000 < 30_000
    assert Engine(settings, spark).run(query).input_rows == 10
    written = admin.read_all(kafka_bootstrap, query.output_topic)
    assert sorted(json.loads(record.value)["price"] for record in written) == [5, 6, 7, 8, 9]


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
