"""The streamjoin_kafka Spark source: streaming (availableNow, restart from checkpoint, rate
limit) and batch reads (offset and timestamp ranges), on the session broker."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest
from pyspark.sql.functions import spark_partition_id

from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord

pytestmark = pytest.mark.integration

PARTITIONS = 3


def produce_numbered(bootstrap: str, topic: str, first: int, count: int) -> None:
    """Records n = first..first+count-1: key b"k<n>", value b"v<n>", timestamp 1_000_000 + n ms,
    header ("n", b"<n>"); spread over partitions by key (murmur2)."""
    admin.produce(bootstrap, topic, (
        OutRecord(key=b"k%d" % n, value=b"v%d" % n, timestamp_ms=1_000_000 + n,
                  headers=(("n", b"%d" % n),))
        for n in range(first, first + count)))


def stream(spark, bootstrap: str, topic: str, **options):
    reader = (spark.readStream.format("streamjoin_kafka")
              .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic))
    for name, value in options.items():
        reader = reader.option(name, value)
    return reader.load()


def run_available_now(df, checkpoint) -> tuple[list, list[int]]:
    """Run to completion; returns (collected rows, rows per micro-batch)."""
    rows: list = []
    sizes: list[int] = []

    def collect(batch, batch_id):
        got = batch.collect()
        rows.extend(got)
        sizes.append(len(got))

    query = (df.writeStream.foreachBatch(collect).option("checkpointLocation", str(checkpoint))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return rows, sizes


@pytest.fixture
def topic(kafka_bootstrap, unique_topic):
    admin.create_topics(kafka_bootstrap, {unique_topic: PARTITIONS})
    return unique_topic


def test_available_now_reads_every_partition(spark, kafka_bootstrap, topic, tmp_path):
    produce_numbered(kafka_bootstrap, topic, 0, 300)
    source = stream(spark, kafka_bootstrap, topic).withColumn("task", spark_partition_id())
    rows, _ = run_available_now(source, tmp_path / "ck")

    ends = admin.end_offsets(kafka_bootstrap, topic)
    assert sum(ends.values()) == 300 and all(ends.values()), ends
    for partition, end in ends.items():
        offsets = sorted(r.offset for r in rows if r.partition == partition)
        assert offsets == list(range(end)), f"partition {partition}: gaps or duplicates"
    for row in rows:  # every column round-trips
        n = int(bytes(row.key)[1:])
        assert (bytes(row.key), bytes(row.value), row.topic) == (b"k%d" % n, b"v%d" % n, topic)
        assert row.timestamp.timestamp() * 1000 == pytest.approx(1_000_000 + n)
        assert row.timestampType == 0
        assert [(h.key, bytes(h.value)) for h in row.headers] == [("n", b"%d" % n)]
        assert row.task == row.partition, "Spark input partition i reads Kafka partition i"


def test_restart_from_checkpoint_loses_and_repeats_nothing(spark, kafka_bootstrap, topic,
                                                           tmp_path):
    # run 1 reads 0..199 | 150 more produced | run 2, same checkpoint, reads only those 150
    checkpoint = tmp_path / "ck"
    produce_numbered(kafka_bootstrap, topic, 0, 200)
    first, _ = run_available_now(stream(spark, kafka_bootstrap, topic), checkpoint)
    produce_numbered(kafka_bootstrap, topic, 200, 150)
    second, _ = run_available_now(stream(spark, kafka_bootstrap, topic), checkpoint)

    assert (len(first), len(second)) == (200, 150)
    positions = {(r.partition, r.offset) for r in first + second}
    assert len(positions) == 350
    assert {bytes(r.key) for r in second} == {b"k%d" % n for n in range(200, 350)}


def test_max_offsets_per_trigger_splits_the_backlog(spark, kafka_bootstrap, topic, tmp_path):
    produce_numbered(kafka_bootstrap, topic, 0, 300)
    rows, sizes = run_available_now(
        stream(spark, kafka_bootstrap, topic, maxOffsetsPerTrigger=100), tmp_path / "ck")
    assert len({(r.partition, r.offset) for r in rows}) == 300
    assert len(sizes) >= 3 and max(sizes) <= 100, sizes


def test_starting_offsets_latest_skips_existing_records(spark, kafka_bootstrap, topic, tmp_path):
    # initial offsets are fixed by a first (empty) run; records produced later are read
    checkpoint = tmp_path / "ck"
    produce_numbered(kafka_bootstrap, topic, 0, 50)
    before, _ = run_available_now(stream(spark, kafka_bootstrap, topic,
                                         startingOffsets="latest"), checkpoint)
    produce_numbered(kafka_bootstrap, topic, 50, 30)
    after, _ = run_available_now(stream(spark, kafka_bootstrap, topic,
                                        startingOffsets="latest"), checkpoint)
    assert before == []
    assert sorted(bytes(r.key) for r in after) == sorted(b"k%d" % n for n in range(50, 80))


@dataclass(frozen=True)
class Case:
    options: dict  # batch read options; "$ends"/"$mid" are replaced by computed offsets
    expected: set | str  # expected record numbers n, or "first half" / "second half"


# 90 records n = 0..89 with timestamps 1_000_000 + n; `mid` = half of each partition's end offset.
BATCH_CASES = {
    "everything": Case({}, set(range(90))),
    "timestamp range [1_000_030, 1_000_060)": Case(
        {"startingTimestamp": 1_000_030, "endingTimestamp": 1_000_060}, set(range(30, 60))),
    "from a timestamp": Case({"startingTimestamp": 1_000_080}, set(range(80, 90))),
    "timestamp after the data": Case({"startingTimestamp": 2_000_000}, set()),
    "until a timestamp": Case({"endingTimestamp": 1_000_010}, set(range(10))),
    "offsets: first half of every partition": Case({"endingOffsets": "$mid"}, "first half"),
    "offsets: second half, -1 = latest": Case({"startingOffsets": "$mid", "endingOffsets": "$-1"},
                                              "second half"),
}


@pytest.mark.parametrize("name", BATCH_CASES)
def test_batch_read_ranges(spark, kafka_bootstrap, topic, name):
    case = BATCH_CASES[name]
    produce_numbered(kafka_bootstrap, topic, 0, 90)
    ends = admin.end_offsets(kafka_bootstrap, topic)
    mid = {p: end // 2 for p, end in ends.items()}
    every = admin.read_all(kafka_bootstrap, topic)
    halves = {"first half": {int(r.key[1:]) for r in every if r.offset < mid[r.partition]},
              "second half": {int(r.key[1:]) for r in every if r.offset >= mid[r.partition]}}

    def as_json(offsets: dict) -> str:
        return json.dumps({topic: {str(p): o for p, o in offsets.items()}})

    substitute = {"$mid": as_json(mid), "$-1": as_json({p: -1 for p in ends})}
    reader = (spark.read.format("streamjoin_kafka")
              .option("kafka.bootstrap.servers", kafka_bootstrap).option("subscribe", topic))
    for option, value in case.options.items():
        reader = reader.option(option, substitute.get(value, value))
    got = [int(bytes(r.key)[1:]) for r in reader.load().select("key").collect()]

    expected = halves[case.expected] if isinstance(case.expected, str) else case.expected
    assert sorted(got) == sorted(expected)


def test_bad_options_give_clear_errors(spark, kafka_bootstrap, topic):
    reader = spark.read.format("streamjoin_kafka").option("kafka.bootstrap.servers",
                                                          kafka_bootstrap)
    with pytest.raises(Exception, match="subscribe"):
        reader.load().collect()
    with pytest.raises(Exception, match="startingOffsets"):
        reader.option("subscribe", topic).option("startingOffsets", "yesterday").load().collect()


def test_a_batch_plans_only_the_partitions_with_new_records_unless_the_input_ends(kafka_bootstrap, topic):
    # One record, in one of the three partitions: a Spark task per empty partition would only cost
    # a Python worker round trip; at the end of a bounded input every partition must say so.
    from pyspark.sql.datasource import ReadAllAvailable

    from streamjoin.spark.kafka_source import KafkaStreamReader

    options = {"kafka.bootstrap.servers": kafka_bootstrap, "subscribe": topic, "startingOffsets": "earliest"}
    produce_numbered(kafka_bootstrap, topic, 0, 1)
    reader = KafkaStreamReader(options)
    start = reader.initialOffset()
    planned = reader.partitions(start, reader.latestOffset(start, ReadAllAvailable()))
    assert [(r.start, r.end, r.end_marker) for r in planned] == [(0, 1, False)]

    bounded = KafkaStreamReader({**options, "streamjoin.endOfInput": "true"})
    bounded.prepareForTriggerAvailableNow()
    planned = bounded.partitions(start, bounded.latestOffset(start, ReadAllAvailable()))
    assert sorted((r.end - r.start, r.end_marker) for r in planned) == [(0, True), (0, True), (1, True)]
    reader.stop()
    bounded.stop()
