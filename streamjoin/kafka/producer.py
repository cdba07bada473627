"""Producing with Kafka's default partitioning, computed by us (not by the client) so that it is
the same in every producer we write and deterministic for keyless records too."""

from __future__ import annotations

from typing import Iterable

from kafka import KafkaProducer

from streamjoin.kafka.murmur2 import default_partition
from streamjoin.kafka.records import OutRecord


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


def send_all(producer: KafkaProducer, topic: str, records: Iterable[OutRecord]) -> int:
    """Send `records` to `topic` and flush; raises the first send error. Returns the count."""
    partitions = partition_count(producer, topic)
    futures = []
    for sequence, record in enumerate(records):
        partition = (record.partition if record.partition is not None
                     else choose_partition(record.key, partitions, sequence))
        futures.append(producer.send(topic, key=record.key, value=record.value,
                                     partition=partition, timestamp_ms=record.timestamp_ms,
                                     headers=list(record.headers)))
    producer.flush()
    for future in futures:
        future.get()  # re-raises a failed send: at-least-once means no silent loss
    return len(futures)
