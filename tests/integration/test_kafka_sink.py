"""The streamjoin_kafka Spark sink: default partitioning, tombstones, explicit columns, and the
replay header that lets readers drop the copies an at-least-once replay writes."""

from __future__ import annotations

import datetime as dt

import pytest

from streamjoin.kafka import admin
from streamjoin.kafka.murmur2 import default_partition
from streamjoin.kafka.records import REPLAY_HEADER, OutRecord, dedupe_replayed

pytestmark = pytest.mark.integration

PARTITIONS = 3
UTC = dt.timezone.utc


def test_streaming_sink_partitions_like_kafka_and_writes_tombstones(spark, kafka_bootstrap,
                                                                   unique_topic, tmp_path):
    # source topic (1 partition) -> availableNow query -> sink topic (3 partitions)
    # n = 0..119: key b"key-<n>", value b"val-<n>" except every 10th n: null value (tombstone)
    source, sink = f"{unique_topic}-in", f"{unique_topic}-out"
    admin.create_topics(kafka_bootstrap, {source: 1, sink: PARTITIONS})
    admin.produce(kafka_bootstrap, source, (
        OutRecord(key=b"key-%d" % n, value=None if n % 10 == 0 else b"val-%d" % n,
                  timestamp_ms=5_000 + n) for n in range(120)))

    query = (spark.readStream.format("streamjoin_kafka")
             .option("kafka.bootstrap.servers", kafka_bootstrap).option("subscribe", source).load()
             .select("key", "value", "timestamp")
             .writeStream.format("streamjoin_kafka")
             .option("kafka.bootstrap.servers", kafka_bootstrap).option("topic", sink)
             .option("writerId", "q1").option("checkpointLocation", str(tmp_path / "ck"))
             .trigger(availableNow=True).start())
    query.awaitTermination()

    written = admin.read_all(kafka_bootstrap, sink)
    assert len(written) == 120
    for record in written:
        n = int(record.key.split(b"-")[1])
        assert record.partition == default_partition(record.key, PARTITIONS), record.key
        assert record.value == (None if n % 10 == 0 else b"val-%d" % n)
        assert record.timestamp_ms == 5_000 + n
        writer, batch, seq = record.header(REPLAY_HEADER).decode().split(":")
        assert (writer, batch) == ("q1", "0") and seq
    assert len({r.header(REPLAY_HEADER) for r in written}) == 120, "ids are unique"


def test_batch_write_replay_is_dropped_by_dedupe(spark, kafka_bootstrap, unique_topic):
    # foreachBatch style: the same batch (id 7) is written twice, as after a crash before commit
    admin.create_topics(kafka_bootstrap, {unique_topic: PARTITIONS})
    rows = [(b"a", b"1", None, None), (b"b", b"2", 2, [("origin", b"x")]), (None, b"3", None, None)]
    frame = spark.createDataFrame(rows, "key binary, value binary, partition int, "
                                        "headers array<struct<key string, value binary>>")
    for _ in range(2):
        (frame.write.format("streamjoin_kafka").mode("append")
         .option("kafka.bootstrap.servers", kafka_bootstrap).option("topic", unique_topic)
         .option("writerId", "backfill").option("batchId", "7").save())

    written = admin.read_all(kafka_bootstrap, unique_topic)
    assert len(written) == 6
    kept = list(dedupe_replayed(sorted(written, key=lambda r: (r.partition, r.offset))))
    assert sorted(((r.key, r.value) for r in kept), key=repr) == sorted(
        [(b"a", b"1"), (b"b", b"2"), (None, b"3")], key=repr)
    by_value = {r.value: r for r in kept}
    assert by_value[b"1"].partition == default_partition(b"a", PARTITIONS)
    assert by_value[b"2"].partition == 2, "an explicit partition column wins"
    assert by_value[b"2"].header("origin") == b"x", "given headers are kept"
    assert all(r.header(REPLAY_HEADER).startswith(b"backfill:7:") for r in kept)


def test_topic_column_routes_rows(spark, kafka_bootstrap, unique_topic):
    first, second = f"{unique_topic}-a", f"{unique_topic}-b"
    admin.create_topics(kafka_bootstrap, {first: 1, second: 1})
    ts = dt.datetime(2024, 5, 1, 12, 0, 0, 123000, tzinfo=UTC)
    frame = spark.createDataFrame([(first, b"k", b"x", ts), (second, b"k", b"y", ts)],
                                  "topic string, key binary, value binary, timestamp timestamp")
    (frame.write.format("streamjoin_kafka").mode("append")
     .option("kafka.bootstrap.servers", kafka_bootstrap).save())

    for topic, value in ((first, b"x"), (second, b"y")):
        [record] = admin.read_all(kafka_bootstrap, topic)
        assert record.value == value
        assert record.timestamp_ms == int(ts.timestamp() * 1000)


def test_missing_value_column_is_a_clear_error(spark, kafka_bootstrap, unique_topic):
    frame = spark.createDataFrame([(b"k",)], "key binary")
    with pytest.raises(Exception, match="'value' column"):
        (frame.write.format("streamjoin_kafka").mode("append")
         .option("kafka.bootstrap.servers", kafka_bootstrap).option("topic", unique_topic).save())


@pytest.mark.integration
def test_the_query_sink_keeps_every_timestamp_even_epoch_zero(kafka_bootstrap, unique_topic):
    """librdkafka reads a produce timestamp of 0 as "now": such a write takes kafka-python."""
    import pyarrow as pa

    from streamjoin.kafka.client import kafka_client_config
    from streamjoin.kafka.rdkafka import produce_arrow

    admin.create_topics(kafka_bootstrap, {unique_topic: 1})
    for stamps in ([5, 7], [0, 9]):
        batch = pa.record_batch({"key": [b"a", b"b"], "value": [b"1", b"2"],
                                 "timestamp": pa.array(stamps, pa.int64()).cast(pa.timestamp("ms"))})
        assert produce_arrow(kafka_client_config(bootstrap=kafka_bootstrap), [batch], "w", 0,
                             default_topic=unique_topic) == 2
    assert [r.timestamp_ms for r in admin.read_all(kafka_bootstrap, unique_topic)] == [5, 7, 0, 9]
