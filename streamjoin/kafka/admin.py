"""Kafka admin and client helpers for the engine, tests and benchmarks. Every function takes the
bootstrap servers; security settings come from `Settings` (environment) unless given."""

from __future__ import annotations

import time
from contextlib import contextmanager, suppress
from typing import Iterable, Iterator

from confluent_kafka import Message
from kafka import KafkaAdminClient
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError

from streamjoin.settings import Settings
from streamjoin.kafka.client import kafka_client_config, kafka_python_config
from streamjoin.kafka import offsets
from streamjoin.kafka.producer import bulk_producer, send_all
from streamjoin.kafka.rdkafka import read_range
from streamjoin.kafka.records import ConsumedRecord, OutRecord


METADATA_WAIT_S = 30.0


def _config(bootstrap: str, settings: Settings | None) -> dict:
    return kafka_client_config(settings, bootstrap)


@contextmanager
def _admin_client(bootstrap: str, settings: Settings | None) -> Iterator[KafkaAdminClient]:
    admin = KafkaAdminClient(**kafka_python_config(_config(bootstrap, settings)))
    try:
        yield admin
    finally:
        admin.close()


def create_topics(bootstrap: str, partitions_by_topic: dict[str, int],
                  settings: Settings | None = None, replication_factor: int = -1) -> None:
    """Create missing topics; existing ones must already have the requested partition count.
    `replication_factor` -1: the brokers' `default.replication.factor` (a cluster's, not one copy)."""
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
    _await_metadata(bootstrap, settings, {topic.name: topic.num_partitions for topic in new})


def delete_topics(bootstrap: str, topics: list[str], settings: Settings | None = None) -> None:
    """Delete `topics`; one that does not exist (any more) is not an error."""
    if not topics:
        return
    with _admin_client(bootstrap, settings) as admin, suppress(UnknownTopicOrPartitionError):
        admin.delete_topics(topics)  # one deleted already is the outcome asked for
    _await_metadata(bootstrap, settings, dict.fromkeys(topics, 0))


def _await_metadata(bootstrap: str, settings: Settings | None, partitions_by_topic: dict[str, int]) -> None:
    """Wait until the broker's metadata shows each topic with its partition count (0: gone).
    Apache Kafka answers CreateTopics and DeleteTopics once its controller has decided, before
    every broker's metadata says so; a caller that then produces, reads or creates the topic again
    must not race that."""
    deadline = time.monotonic() + METADATA_WAIT_S
    with offsets.OffsetClient(_config(bootstrap, settings)) as client:
        while True:
            known = client.partitions_of(list(partitions_by_topic))
            late = sorted(topic for topic, count in partitions_by_topic.items() if len(known[topic]) != count)
            if not late:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"the broker's metadata did not show {late} as asked within {METADATA_WAIT_S:g} s")
            time.sleep(0.05)


def list_topics(bootstrap: str, settings: Settings | None = None) -> list[str]:
    with _admin_client(bootstrap, settings) as admin:
        return sorted(admin.list_topics())


def partition_counts(bootstrap: str, topics: list[str], settings: Settings | None = None,
                     missing_ok: bool = False) -> dict[str, int]:
    """{topic: partition count}; missing topics raise ValueError unless missing_ok (then absent)."""
    with offsets.OffsetClient(_config(bootstrap, settings)) as client:
        known = client.partitions_of(topics)
    counts = {}
    for topic in topics:
        if known[topic]:
            counts[topic] = len(known[topic])
        elif not missing_ok:
            raise ValueError(f"Kafka topic {topic!r} does not exist")
    return counts


def end_offsets(bootstrap: str, topic: str, settings: Settings | None = None) -> dict[int, int]:
    """{partition: log end offset (next offset to be written)}, exact on Tansu too."""
    with offsets.OffsetClient(_config(bootstrap, settings)) as client:
        return {tp.partition: end for tp, end in client.ends(client.topic_partitions([topic])).items()}


def log_ranges(bootstrap: str, topics: list[str], settings: Settings | None = None) -> tuple[dict, dict]:
    """({TopicPartition: first offset}, {TopicPartition: log end offset}) of every partition of
    `topics` that exist; the end is exact on Tansu too."""
    with offsets.OffsetClient(_config(bootstrap, settings)) as client:
        known = client.partitions_of(topics)
        tps = [offsets.TopicPartition(topic, p) for topic in topics for p in sorted(known[topic])]
        return client.beginnings(tps), client.ends(tps)


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
    with offsets.OffsetClient(config) as client:
        tps = client.topic_partitions([topic])
        starts, ends = client.beginnings(tps), client.ends(tps)
    return [consumed(message) for tp in tps
            for messages in read_range(config, topic, tp.partition, starts[tp], ends[tp])
            for message in messages]


def consumed(message: Message) -> ConsumedRecord:
    """ConsumedRecord from a librdkafka Message."""
    kind, timestamp = message.timestamp()
    return ConsumedRecord(topic=message.topic(), partition=message.partition(), offset=message.offset(),
                          key=message.key(), value=message.value(), timestamp_ms=timestamp,
                          timestamp_type=max(kind - 1, 0),  # librdkafka: 1 create time, 2 log-append time
                          headers=tuple(message.headers() or ()))
