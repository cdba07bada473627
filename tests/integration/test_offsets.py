"""Log end offsets on the session broker (streamjoin/kafka/offsets.py), with the record of ends
a caller keeps between calls: a partition whose log has not grown is not fetched again. And
partition lookups that ask the broker about the topics named, never about all of its topics.

Timeline (one partition; Tansu lists the base offset of the last batch, so the true end needs
a fetch, which decodes that whole batch in Python):

    2,000 records in one batch   -> end 2,000   (fetched)
    nothing new                  -> end 2,000   (no fetch: the listed offset has not moved)
    one more record              -> end 2,001   (fetched)
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from kafka import TopicPartition

from streamjoin.kafka import admin, offsets
from streamjoin.kafka.client import kafka_client_config
from streamjoin.kafka.rdkafka import rdkafka_config
from streamjoin.settings import Settings

pytestmark = pytest.mark.integration


def produce(config: dict, topic: str, count: int) -> None:
    producer = Producer({**rdkafka_config(config), "linger.ms": 100})
    for n in range(count):
        producer.produce(topic, key=b"k%d" % n, value=b"{}", partition=0)
    producer.flush()


def test_a_partition_that_has_not_grown_is_not_fetched_again(kafka_bootstrap, unique_topic):
    config = kafka_client_config(Settings.from_env(), kafka_bootstrap)
    admin.create_topics(kafka_bootstrap, {unique_topic: 1})
    consumer = offsets.offset_consumer(config)
    polls = []
    poll = consumer.poll
    consumer.poll = lambda **kwargs: polls.append(kwargs) or poll(**kwargs)  # counts the fetches
    tp, known = TopicPartition(unique_topic, 0), {}
    try:
        produce(config, unique_topic, 2_000)
        assert offsets.log_end_offsets(consumer, [tp], known) == {tp: 2_000}
        fetched = len(polls)
        assert fetched >= 1

        assert offsets.log_end_offsets(consumer, [tp], known) == {tp: 2_000}
        assert len(polls) == fetched, "the log has not grown: no fetch"

        produce(config, unique_topic, 1)
        assert offsets.log_end_offsets(consumer, [tp], known) == {tp: 2_001}
        assert len(polls) > fetched
        assert offsets.log_end_offsets(consumer, [tp]) == {tp: 2_001}  # without a record: always fetched
    finally:
        consumer.close()


def test_partitions_are_looked_up_by_name_and_a_missing_topic_is_not_created(kafka_bootstrap, unique_topic):
    config = kafka_client_config(Settings.from_env(), kafka_bootstrap)
    admin.create_topics(kafka_bootstrap, {unique_topic: 3})
    missing = f"{unique_topic}-missing"
    consumer = offsets.offset_consumer(config)
    asked = []
    request = consumer._cluster.metadata_request
    consumer._cluster.metadata_request = lambda: asked.append(request()) or asked[-1]
    try:
        assert offsets.partitions_of(consumer, [unique_topic, missing]) == {unique_topic: {0, 1, 2}, missing: set()}
        assert offsets.partitions_of(consumer, [missing]) == {missing: set()}  # the only one asked: still empty
        looked_up = len(asked)
        assert offsets.topic_partitions(consumer, [unique_topic]) == [TopicPartition(unique_topic, p) for p in range(3)]
        assert len(asked) == looked_up, "a known topic is answered from the consumer's metadata"
    finally:
        consumer.close()
    assert asked and all(r.topics is not None for r in asked), "never a request for every topic"
    assert {t.name for r in asked for t in r.topics} <= {unique_topic, missing}
    assert admin.partition_counts(kafka_bootstrap, [missing], missing_ok=True) == {}, "looking it up created it"
