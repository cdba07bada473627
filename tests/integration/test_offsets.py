"""Offset lookups on the session broker (streamjoin/kafka/offsets.py): log ends, exact as Apache
Kafka lists them and, on Tansu (a broker of its own here), with the record of ends a caller keeps
between calls (a partition whose log has not grown is not read again); partition lookups that
name their topics and never create a missing one; timestamp lookups.

Timeline on Tansu (one partition; Tansu lists one past the base offset of the last batch, so the
true end needs a read through that batch until librdkafka reports the partition's end):

    2,000 records in one batch   -> end 2,000   (read)
    nothing new                  -> end 2,000   (no read: the listed offset has not moved)
    one more record              -> end 2,001   (read)
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from streamjoin.kafka import admin, embedded
from streamjoin.kafka.client import kafka_client_config, rdkafka_config
from streamjoin.kafka.offsets import OffsetClient, TopicPartition
from streamjoin.settings import BrokerKind, Settings

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tansu_bootstrap(tmp_path_factory):
    """A Tansu broker of this module's own (it starts in milliseconds)."""
    settings = Settings(home=tmp_path_factory.mktemp("tansu"), broker_kind=BrokerKind.TANSU)
    yield embedded.start(settings, detached=False).bootstrap
    embedded.stop(settings)


@pytest.fixture
def counted_fetches(monkeypatch) -> list:
    """The reads of `OffsetClient._fetch_ends`, one entry a call."""
    reads = []
    fetch_ends = OffsetClient._fetch_ends
    monkeypatch.setattr(OffsetClient, "_fetch_ends", lambda self, starts: reads.append(starts) or fetch_ends(self, starts))
    return reads


def produce(config: dict, topic: str, timestamps: list[int]) -> None:
    producer = Producer({**rdkafka_config(config), "linger.ms": 100})
    for n, timestamp in enumerate(timestamps):
        producer.produce(topic, key=b"k%d" % n, value=b"{}", partition=0, timestamp=timestamp)
    producer.flush()


def test_kafka_lists_the_log_end_itself(kafka_bootstrap, unique_topic, counted_fetches):
    settings = Settings.from_env()
    if settings.kafka_bootstrap or settings.broker_kind is not BrokerKind.KAFKA:
        pytest.skip("the session broker is not the embedded Apache Kafka (STREAMJOIN_KAFKA_BOOTSTRAP or _BROKER_KIND)")
    config = kafka_client_config(settings, kafka_bootstrap)
    admin.create_topics(kafka_bootstrap, {unique_topic: 1})
    tp = TopicPartition(unique_topic, 0)
    with OffsetClient(config) as client:
        produce(config, unique_topic, [1_000 + n for n in range(2_000)])
        assert client.ends([tp], {}) == {tp: 2_000}
        produce(config, unique_topic, [5_000])
        assert client.ends([tp]) == {tp: 2_001}
    assert counted_fetches == [], "Apache Kafka's ListOffsets answer is the end: no fetch"


def test_on_tansu_a_partition_that_has_not_grown_is_not_read_again(tansu_bootstrap, unique_topic, counted_fetches):
    config = kafka_client_config(Settings(), tansu_bootstrap)
    admin.create_topics(tansu_bootstrap, {unique_topic: 1})
    reads = counted_fetches
    tp, known = TopicPartition(unique_topic, 0), {}
    with OffsetClient(config) as client:
        produce(config, unique_topic, [1_000 + n for n in range(2_000)])
        assert client.ends([tp], known) == {tp: 2_000}
        assert len(reads) == 1

        assert client.ends([tp], known) == {tp: 2_000}
        assert len(reads) == 1, "the log has not grown: no read"

        produce(config, unique_topic, [5_000])
        assert client.ends([tp], known) == {tp: 2_001}
        assert len(reads) == 2
        assert client.ends([tp]) == {tp: 2_001}  # without a record of ends: always read
        assert len(reads) == 3
        assert client.beginnings([tp]) == {tp: 0}


def test_partitions_are_looked_up_by_name_and_a_missing_topic_is_not_created(kafka_bootstrap, unique_topic):
    config = kafka_client_config(Settings.from_env(), kafka_bootstrap)
    admin.create_topics(kafka_bootstrap, {unique_topic: 3})
    missing = f"{unique_topic}-missing"
    with OffsetClient(config) as client:
        assert client.partitions_of([unique_topic, missing]) == {unique_topic: {0, 1, 2}, missing: set()}
        assert client.topic_partitions([unique_topic]) == [TopicPartition(unique_topic, p) for p in range(3)]
        with pytest.raises(ValueError, match="does not exist"):
            client.topic_partitions([missing])
    assert admin.partition_counts(kafka_bootstrap, [missing], missing_ok=True) == {}, "looking it up created it"


def test_a_timestamp_finds_the_first_record_at_or_after_it_in_offset_order(kafka_bootstrap, unique_topic):
    """Record timestamps out of order (Tansu answers by append time, so the answer is checked):

        offset     0    1    2    3    4
        timestamp  10   40   20   50   30
    """
    config = kafka_client_config(Settings.from_env(), kafka_bootstrap)
    admin.create_topics(kafka_bootstrap, {unique_topic: 1})
    produce(config, unique_topic, [10, 40, 20, 50, 30])
    tp = TopicPartition(unique_topic, 0)
    with OffsetClient(config) as client:
        ends = client.ends([tp])
        found = {t: client.for_timestamp([tp], t, ends)[tp] for t in (5, 10, 11, 30, 41, 50, 51)}
    assert found == {5: 0, 10: 0, 11: 1, 30: 1, 41: 3, 50: 3, 51: 5}

