"""I/O benchmark: how much of raw librdkafka read speed the Spark source keeps.

Produces RECORDS records to a 2-partition topic on the embedded broker (or
STREAMJOIN_KAFKA_BOOTSTRAP), then reads them twice in the same run:
  1. raw librdkafka, as the source's read tasks read (`rdkafka.read_range`), partition by partition;
  2. the streamjoin_kafka Spark source, availableNow into the no-op sink (after a small warm-up
     query, so Python worker start-up is not counted).
Prints both rates and their ratio. Usage: python bench/io.py [RECORDS]
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid

from streamjoin.kafka.embedded import ensure_bootstrap
from streamjoin.settings import Settings
from streamjoin.kafka.client import kafka_client_config
from streamjoin.kafka import admin, rdkafka
from streamjoin.kafka.records import OutRecord

PARTITIONS = 2
VALUE = b"x" * 100


def produce(bootstrap: str, topic: str, count: int) -> float:
    admin.create_topics(bootstrap, {topic: PARTITIONS})
    started = time.perf_counter()
    admin.produce(bootstrap, topic, (OutRecord(key=b"key-%d" % n, value=VALUE,
                                               timestamp_ms=1_700_000_000_000 + n)
                                     for n in range(count)))
    return count / (time.perf_counter() - started)


def raw_read_rate(bootstrap: str, topic: str, count: int) -> float:
    config = kafka_client_config(bootstrap=bootstrap)
    ends = admin.end_offsets(bootstrap, topic)
    started = time.perf_counter()
    seen = sum(len(messages) for partition in range(PARTITIONS)
               for messages in rdkafka.read_range(config, topic, partition, 0, ends[partition]))
    assert seen == count, (seen, count)
    return count / (time.perf_counter() - started)


def spark_read_rate(spark, bootstrap: str, topic: str, count: int,
                    checkpoint: str) -> tuple[float, float]:
    """(rate over the query's wall time, rate over its micro-batches only: no start/stop)."""
    started = time.perf_counter()
    query = (spark.readStream.format("streamjoin_kafka")
             .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic).load()
             .writeStream.format("noop").option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    query.awaitTermination()
    elapsed = time.perf_counter() - started
    read = sum(progress["numInputRows"] for progress in query.recentProgress)
    if read != count:
        raise RuntimeError(f"Spark source read {read} records, expected {count}")
    in_batches = sum(p["durationMs"]["triggerExecution"] for p in query.recentProgress) / 1000
    return count / elapsed, count / in_batches


def main(count: int) -> None:
    bootstrap = ensure_bootstrap(Settings.from_env())
    topic, warmup = f"bench-io-{uuid.uuid4().hex[:8]}", f"bench-io-warmup-{uuid.uuid4().hex[:8]}"
    print(f"broker {bootstrap}; producing {count:,} records ({len(VALUE)} B values) "
          f"to {PARTITIONS} partitions")
    produced = produce(bootstrap, topic, count)
    print(f"produce (kafka-python, murmur2 partitioning): {produced:>9,.0f} rec/s")
    raw = raw_read_rate(bootstrap, topic, count)
    print(f"raw librdkafka read (read_range):            {raw:>9,.0f} rec/s")

    from streamjoin.spark.session import get_spark

    spark = get_spark(app_name="streamjoin-bench-io")
    produce(bootstrap, warmup, 2_000)
    with tempfile.TemporaryDirectory() as tmp:
        spark_read_rate(spark, bootstrap, warmup, 2_000, f"{tmp}/warmup")
        via_spark, in_batches = spark_read_rate(spark, bootstrap, topic, count, f"{tmp}/bench")
    print(f"Spark source -> noop sink (availableNow):     {via_spark:>9,.0f} rec/s "
          f"(query wall time; {in_batches:,.0f} rec/s inside micro-batches)")
    print(f"ratio Spark/raw: {via_spark / raw:.2f}")
    spark.stop()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300_000)
