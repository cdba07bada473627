"""The control path's producer (kafka-python: samples, dead letters, tests): Kafka's default
partitioning computed by us (`murmur2.choose_partition`), deterministic for keyless records too.
A query's results take the data path (`rdkafka.produce_arrow`)."""

from __future__ import annotations

from typing import Iterable

from kafka import KafkaProducer

from streamjoin.kafka.client import kafka_python_config
from streamjoin.kafka.murmur2 import choose_partition
from streamjoin.kafka.records import OutRecord


def bulk_producer(client_config: dict) -> KafkaProducer:
    """A producer tuned for throughput that still acknowledges every write on all replicas."""
    return KafkaProducer(**kafka_python_config(client_config), acks="all", linger_ms=5, batch_size=512 * 1024,
                         max_request_size=16 * 1024 * 1024)


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

