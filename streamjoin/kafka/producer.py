"""Producing with Kafka's default partitioning, computed by us (not by the client) so that it is
the same in every producer we write and deterministic for keyless records too."""

from __future__ import annotations

from typing import Iterable, Iterator

import pyarrow as pa
from kafka import KafkaProducer

from streamjoin.kafka.murmur2 import default_partition
from streamjoin.kafka.records import REPLAY_HEADER, OutRecord


def bulk_producer(client_config: dict) -> KafkaProducer:
    """A producer tuned for throughput that still acknowledges every write on all replicas."""
    return KafkaProducer(**client_config, acks="all", linger_ms=5, batch_size=512 * 1024,
                         max_request_size=16 * 1024 * 1024)


def choose_partition(key: bytes | None, partitions: int, sequence: int) -> int:
    """Keyed: Kafka's default partitioner. Keyless: round-robin by the record's sequence number
    within its write (deterministic, so a replayed write lands records where they were)."""
    if key is None:
        return sequence % partitions
    return default_partition(key, partitions)


def partition_count(producer: KafkaProducer, topic: str) -> int:
    partitions = producer.partitions_for(topic)
    if not partitions:
        raise ValueError(f"Kafka topic {topic!r} does not exist")
    return len(partitions)


def send_all(producer: KafkaProducer, records: Iterable[tuple[str, OutRecord]],
             first_sequence: int = 0) -> int:
    """Send (topic, record) pairs, flush, and raise the first failed send (at-least-once means
    no silent loss). Keyless records without a partition go round-robin by sequence number,
    counted from `first_sequence`. Returns the number of records acknowledged."""
    partitions_of: dict[str, int] = {}
    futures = []
    for sequence, (topic, record) in enumerate(records, first_sequence):
        partition = record.partition
        if partition is None:
            if topic not in partitions_of:
                partitions_of[topic] = partition_count(producer, topic)
            partition = choose_partition(record.key, partitions_of[topic], sequence)
        futures.append(producer.send(topic, key=record.key, value=record.value,
                                     partition=partition, timestamp_ms=record.timestamp_ms,
                                     headers=list(record.headers)))
    producer.flush()
    for future in futures:
        future.get()
    return len(futures)


def produce_arrow(client_config: dict, batches: Iterable[pa.RecordBatch], writer_id: str, batch_id,
                  task: int = 0, default_topic: str | None = None) -> int:
    """Produce Arrow rows with the columns of Spark's Kafka sink (value; optional key, topic,
    partition, headers, timestamp) and wait for every acknowledgement. Each record carries the
    replay header "<writer_id>:<batch_id>:<task>.<seq>": a replayed batch carries the same ids."""
    id_prefix = f"{writer_id}:{batch_id if batch_id is not None else 'batch'}:{task}."
    producer = bulk_producer(client_config)
    try:
        # Keyless rows start round-robin at the task number so tasks do not all begin on 0.
        return send_all(producer, _arrow_records(batches, id_prefix, default_topic), first_sequence=task)
    finally:
        producer.close()


def _arrow_records(batches: Iterable[pa.RecordBatch], id_prefix: str,
                   default_topic: str | None) -> Iterator[tuple[str, OutRecord]]:
    sequence = 0
    for batch in batches:
        rows = batch.num_rows
        column = {name: batch.column(name).to_pylist() for name in batch.schema.names}
        if "timestamp" in column:  # Arrow timestamps (Spark: microseconds) -> epoch ms
            timestamps = batch.column("timestamp")
            as_ms = pa.timestamp("ms", tz=timestamps.type.tz)
            column["timestamp"] = timestamps.cast(as_ms, safe=False).cast(pa.int64()).to_pylist()
        absent = [None] * rows
        topics, keys, partitions, headers, timestamps = (
            column.get(name, absent) for name in ("topic", "key", "partition", "headers", "timestamp"))
        for row in range(rows):
            given = [(h["key"], h["value"]) for h in headers[row] or ()]
            replay_id = (REPLAY_HEADER, f"{id_prefix}{sequence}".encode())
            yield topics[row] or default_topic, OutRecord(
                key=keys[row], value=column["value"][row], timestamp_ms=timestamps[row],
                headers=(*given, replay_id), partition=partitions[row])
            sequence += 1
