"""Exactly-once to Kafka on the real broker (Apache Kafka, the suite's): a task's batch commits its
results and its marker in one transaction; the batch replayed after that commit (as after a kill
between the Kafka commit and Spark's) is recognised and produces nothing; an attempt left open by
a killed task is aborted by its successor and a zombie still running is fenced, so a
read_committed reader sees every result exactly once, while a read_uncommitted one sees the
aborted copies (each with its replay header); a new checkpoint's batch 0 is not mistaken for the
old one's."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from streamjoin.kafka import admin
from streamjoin.kafka.client import rdkafka_config
from streamjoin.kafka.rdkafka import ProduceFailed, read_range
from streamjoin.kafka.records import REPLAY_HEADER
from streamjoin.kafka.transactions import TaskIdentity, TransactionalBatchProducer
from streamjoin.settings import BrokerKind, Settings

pytestmark = pytest.mark.integration


@pytest.fixture
def kafka(kafka_bootstrap) -> dict:
    if Settings.from_env().broker_kind is not BrokerKind.KAFKA and not Settings.from_env().kafka_bootstrap:
        pytest.skip("transactions are tested on Apache Kafka (STREAMJOIN_BROKER_KIND=kafka): Tansu does not honour aborts")
    return {"bootstrap_servers": [kafka_bootstrap]}


def results(batch: int, count: int = 5) -> dict:
    return {"topics": None, "keys": [b"k%d" % n for n in range(count)],
            "values": [b"b%d-r%d" % (batch, n) for n in range(count)],
            "timestamps": [1000 + n for n in range(count)], "headers": [None] * count}


def produce(config: dict, identity: TaskIdentity, topic: str, batch: int, early: bool = False) -> int:
    """The batch's results through a new producer; `early`: its transaction opened at once
    (`open_early`), as a task does at its batch's start."""
    producer = TransactionalBatchProducer(config, identity, timeout_s=20)
    if early:
        producer.open_early(batch)
    return write(producer, topic, batch)


def write(producer: TransactionalBatchProducer, topic: str, batch: int) -> int:
    rows = results(batch)
    return producer.produce_columns(batch, [topic] * len(rows["keys"]), rows["keys"], rows["values"],
                                    rows["timestamps"], rows["headers"])


def values(config: dict, topic: str, committed: bool = True) -> list[bytes]:
    """Every record value of the topic's one partition, read_committed or read_uncommitted."""
    consumer = Consumer({**rdkafka_config(config), "group.id": "t", "isolation.level": "read_uncommitted"})
    _, end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    consumer.close()
    if committed:
        return [m.value() for chunk in read_range(config, topic, 0, 0, end) for m in chunk]
    consumer = Consumer({**rdkafka_config(config), "group.id": "t", "isolation.level": "read_uncommitted",
                         "enable.partition.eof": True})
    consumer.assign([TopicPartition(topic, 0, 0)])
    found = []
    while True:
        message = consumer.poll(10)
        assert message is not None, "read_uncommitted reader stalled"
        if message.error():
            break
        found.append((message.value(), dict(message.headers() or ())[REPLAY_HEADER]))
    consumer.close()
    return found


def open_attempt(config: dict, identity: TaskIdentity, topic: str, batch: int) -> Producer:
    """A task that produced its batch in a transaction and never committed it (killed, or still
    running as a zombie)."""
    producer = Producer({**rdkafka_config(config), "transactional.id": identity.transactional_id})
    producer.init_transactions(20)
    producer.begin_transaction()
    for key, value in zip(results(batch)["keys"], results(batch)["values"]):
        producer.produce(topic, value, key, 0, headers={REPLAY_HEADER: b"zombie"})
    producer.flush(20)
    return producer


def test_a_batch_commits_once_and_its_replay_produces_nothing(kafka, unique_topic):
    admin.create_topics(kafka["bootstrap_servers"][0], {unique_topic: 1})
    identity = TaskIdentity("q", unique_topic, 0, "q@e1")
    assert produce(kafka, identity, unique_topic, 0) == 5
    assert produce(kafka, identity, unique_topic, 0) == 5, "the replay is recognised: the committed count"
    assert produce(kafka, identity, unique_topic, 1) == 5
    assert sorted(values(kafka, unique_topic)) == sorted(results(0)["values"] + results(1)["values"])
    again = TaskIdentity("q", unique_topic, 0, "q@e2")  # a new checkpoint: its batch 0 is new
    assert produce(kafka, again, unique_topic, 0) == 5
    assert len(values(kafka, unique_topic)) == 15


def test_a_transaction_opened_early_commits_once_and_a_later_producer_of_its_id_fences_it(kafka, unique_topic):
    admin.create_topics(kafka["bootstrap_servers"][0], {unique_topic: 1})
    identity = TaskIdentity("q", unique_topic, 0, "q@e1")
    assert produce(kafka, identity, unique_topic, 0, early=True) == 5
    assert produce(kafka, identity, unique_topic, 0, early=True) == 5, "the replay is recognised"
    opened = TransactionalBatchProducer(kafka, identity, timeout_s=20)
    opened.open_early(1)
    opened.opening[1].result()  # initialised and its marker read, while the batch is processed
    zombie = open_attempt(kafka, identity, unique_topic, 1)  # meanwhile another producer of the id starts
    with pytest.raises(ProduceFailed, match="batch 1 not committed"):
        write(opened, unique_topic, 1)  # fenced: its commit cannot go through
    assert produce(kafka, identity, unique_topic, 1, early=True) == 5, "the retry aborts the zombie's and commits"
    with pytest.raises(KafkaException):
        zombie.commit_transaction(20)
    assert sorted(values(kafka, unique_topic)) == sorted(results(0)["values"] + results(1)["values"]), "each once"


def test_a_killed_attempt_is_aborted_and_a_zombie_is_fenced(kafka, unique_topic):
    admin.create_topics(kafka["bootstrap_servers"][0], {unique_topic: 1})
    identity = TaskIdentity("q", unique_topic, 0, "q@e1")
    killed = open_attempt(kafka, identity, unique_topic, 0)  # never commits
    assert produce(kafka, identity, unique_topic, 0) == 5, "its successor aborts it and produces the batch"
    with pytest.raises(KafkaException):
        killed.commit_transaction(20)  # fenced: a newer producer has the id
    zombie = open_attempt(kafka, identity, unique_topic, 1)
    assert produce(kafka, identity, unique_topic, 1) == 5
    with pytest.raises(KafkaException):
        zombie.commit_transaction(20)

    committed = values(kafka, unique_topic)
    assert sorted(committed) == sorted(results(0)["values"] + results(1)["values"]), "each result once"
    uncommitted = values(kafka, unique_topic, committed=False)
    assert len(uncommitted) == 20 and sum(1 for _, replay in uncommitted if replay == b"zombie") == 10


def test_a_refused_record_is_one_line_and_leaves_nothing_committed(kafka, unique_topic):
    admin.create_topics(kafka["bootstrap_servers"][0], {unique_topic: 1})
    identity = TaskIdentity("q", unique_topic, 0, "q@e1")
    producer = TransactionalBatchProducer(kafka, identity, max_bytes=1000, timeout_s=20)
    with pytest.raises(ProduceFailed) as raised:  # a record larger than the producer may send
        producer.produce_columns(0, [unique_topic] * 2, [b"a", b"b"], [b"small", b"x" * 2000], [1, 2], [None, None])
    assert "\n" not in str(raised.value) and identity.transactional_id in str(raised.value)
    assert values(kafka, unique_topic) == [], "the attempt's transaction is aborted"
    assert produce(kafka, identity, unique_topic, 0) == 5, "the batch is not taken for committed"
