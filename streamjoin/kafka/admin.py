"""Kafka admin and client helpers for the engine, tests and benchmarks. Every function takes the
bootstrap servers; security settings come from `Settings` (environment) unless given."""

from __future__ import annotations

from contextlib import contextmanager, suppress
from typing import Iterable, Iterator

from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError

from streamjoin.settings import Settings
from streamjoin.kafka.client import kafka_client_config
from streamjoin.kafka import offsets
from streamjoin.kafka.producer import bulk_producer, send_all
from streamjoin.kafka.records import ConsumedRecord, OutRecord


def _config(bootstrap: str, settings: Settings | None) -> dict:
    return kafka_client_config(settings, bootstrap)


@contextmanager
def _admin_client(bootstrap: str, settings: Settings | None) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(**_config(bootstrap, settings))
    try:
        yield admin
    finally:
        admin.close()


def create_topics(bootstrap: str, partitions_by_topic: dict[str, int],
                  settings: Settings | None = None, replication_factor: int = 1) -> None:
    """Create missing topics; existing ones must already have the requested partition count."""
    existing = partition_counts(bootstrap, list(partitions_by_topic), settings, missing_ok=True)
    for topic, wanted in partitions_by_topic.items():
        if topic in existing and existing[topic] != wanted:
            raise ValueError(f"topic {topic!r} exists with {existing[topic]} partitions, "
                             f"wanted {wanted}")
    new = [NewTopic(topic, n, replication_factor)
           for topic, n in partitions_by_topic.items() if topic not in existing]
    if not new:
        return
    # one created concurrently by another client: idempotent
    with _admin_client(bootstrap, settings) as admin, suppress(TopicAlreadyExistsError):
        admin.create_topics(new)


def delete_topics(bootstrap: str, topics: list[str], settings: Settings | None = None) -> None:
    """Delete `topics`; one that does not exist (any more) is not an error."""
    if not topics:
        return
    with _admin_client(bootstrap, settings) as admin, suppress(UnknownTopicOrPartitionError):
        admin.delete_topics(topics)  # one deleted already is the outcome asked for


def list_topics(bootstrap: str, settings: Settings | None = None) -> list[str]:
    with _admin_client(bootstrap, settings) as admin:
        return sorted(admin.list_topics())


def partition_counts(bootstrap: str, topics: list[str], settings: Settings | None = None,
                     missing_ok: bool = False) -> dict[str, int]:
    """{topic: partition count}; missing topics raise ValueError unless missing_ok (then absent)."""
    consumer = offsets.offset_consumer(_config(bootstrap, settings))
    try:
        counts = {}
        known = offsets.partitions_of(consumer, topics)
        for topic in topics:
            partitions = known[topic]
            if partitions:
                counts[topic] = len(partitions)
            elif not missing_ok:
                raise ValueError(f"Kafka topic {topic!r} does not exist")
        return counts
    finally:
        consumer.close()


def end_offsets(bootstrap: str, topic: str, settings: Settings | None = None) -> dict[int, int]:
    """{partition: log end offset (next offset to be written)}, exact on Tansu too."""
    consumer = offsets.offset_consumer(_config(bootstrap, settings))
    try:
        tps = offsets.topic_partitions(consumer, [topic])
        return {tp.partition: end for tp, end in offsets.log_end_offsets(consumer, tps).items()}
    finally:
        consumer.close()


def log_ranges(bootstrap: str, topics: list[str], settings: Settings | None = None) -> tuple[dict, dict]:
    """({TopicPartition: first offset}, {TopicPartition: log end offset}) of every partition of
    `topics` that exist; the end is exact on Tansu too."""
    consumer = offsets.offset_consumer(_config(bootstrap, settings))
    try:
        known = offsets.partitions_of(consumer, topics)
        existing = [t for t in topics if known[t]]
        tps = offsets.topic_partitions(consumer, existing)
        return offsets.beginning_offsets(consumer, tps), offsets.log_end_offsets(consumer, tps)
    finally:
        consumer.close()


def produce(bootstrap: str, topic: str, records: Iterable[OutRecord],
            settings: Settings | None = None) -> int:
    """Produce `records` (default partitioning: murmur2 of the key; keyless round-robin), flush,
    and return how many were acknowledged."""
    producer = bulk_producer(_config(bootstrap, settings))
    try:
        return send_all(producer, ((topic, record) for record in records))
    finally:
        producer.close()


def read_all(bootstrap: str, topic: str, settings: Settings | None = None) -> list[ConsumedRecord]:
    """Every record of `topic` up to the current end offsets, partition by partition."""
    config = _config(bootstrap, settings)
    consumer = offsets.offset_consumer(config)
    try:
        tps = offsets.topic_partitions(consumer, [topic])
        starts = offsets.beginning_offsets(consumer, tps)
        ends = offsets.log_end_offsets(consumer, tps)
    finally:
        consumer.close()
    reader = offsets.data_consumer(config)
    try:
        return [consumed(record) for tp in tps
                for record in offsets.read_range(reader, tp, starts[tp], ends[tp])]
    finally:
        reader.close()


def consumed(record) -> ConsumedRecord:
    """ConsumedRecord from a kafka-python ConsumerRecord."""
    return ConsumedRecord(topic=record.topic, partition=record.partition, offset=record.offset,
                          key=record.key, value=record.value, timestamp_ms=record.timestamp,
                          timestamp_type=record.timestamp_type, headers=tuple(record.headers))
