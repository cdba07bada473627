"""produce_arrow without a broker: the rows of Spark's Kafka sink columns (replay ids numbered
across batches, keyless rows round-robin from the task number, given headers kept, timestamps in
epoch ms), the arguments librdkafka gets for them, failed or missing acknowledgements, a full
local queue, and the kafka-python path a record of event time 0 takes. produce_columns, which a
task calls with its results as Python columns, must hand either client the same records."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError, KafkaException

from streamjoin.kafka import producer as kafka_python
from streamjoin.kafka import rdkafka, stall
from streamjoin.kafka.client import KafkaUnreachable
from streamjoin.kafka.kept import KeptProducers
from streamjoin.kafka.records import REPLAY_HEADER, OutRecord

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def rows(batches, task=0, default_topic=None, counts=None) -> tuple[list[tuple], list[str]]:
    """(topic, value, key, partition, timestamp, headers, replay id) per row from `_records`, and
    the topics whose partition count it asked for."""
    asked = []

    def partition_count(topic):
        asked.append(topic)
        return (counts or {})[topic]

    found = [row for columns in rdkafka._records(batches, b"w:7:3.", default_topic, task, partition_count)
             for row in zip(*columns)]
    return found, asked


def test_replay_ids_number_the_rows_of_the_write_across_batches():
    batches = [pa.record_batch({"value": [b"a", b"b"]}), pa.record_batch({"value": [b"c"]})]
    found, _ = rows(batches, default_topic="out", counts={"out": 2})
    assert [row[6] for row in found] == [b"w:7:3.0", b"w:7:3.1", b"w:7:3.2"]


def test_keyless_rows_go_round_robin_from_the_task_number_and_keyed_ones_to_the_partitioner():
    batches = [pa.record_batch({"topic": ["a", "a", "b"], "key": [None, b"k", None], "value": [b"1", b"2", b"3"]}),
               pa.record_batch({"topic": ["a", "b"], "key": [None, None], "value": [b"4", b"5"]})]
    found, asked = rows(batches, task=5, counts={"a": 2, "b": 3})
    # position in the write 0..4, from task 5: (5 + position) % partitions of the row's topic
    assert [row[3] for row in found] == [5 % 2, None, 7 % 3, 8 % 2, 9 % 3]
    assert set(asked) == {"a", "b"}


def test_explicit_partitions_win_and_all_keyed_rows_ask_no_partition_count():
    explicit = pa.record_batch({"key": [None, b"k"], "value": [b"1", b"2"],
                                "partition": pa.array([4, None], pa.int32())})
    found, asked = rows([explicit], default_topic="out", counts={"out": 2})
    assert [row[3] for row in found] == [4, None] and asked == []
    keyed = pa.record_batch({"key": [b"k", b"l"], "value": [b"1", b"2"]})
    found, asked = rows([keyed], default_topic="out")
    assert [row[3] for row in found] == [None, None] and asked == []


def test_given_headers_pass_through_and_timestamps_become_epoch_ms():
    stamp = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)
    batch = pa.record_batch({
        "key": [b"k", b"l", b"m"], "value": [b"1", None, b"3"],
        "headers": pa.array([[{"key": "origin", "value": b"x"}, {"key": "n", "value": None}], None, []], HEADERS),
        "timestamp": pa.array([stamp, None, stamp], pa.timestamp("us", tz="UTC"))})
    found, _ = rows([batch], default_topic="out")
    millis = 1_714_564_800_123  # Spark's microseconds, truncated
    assert [(row[1], row[4], row[5]) for row in found] == [
        (b"1", millis, [("origin", b"x"), ("n", None)]), (None, None, None), (b"3", millis, None)]


def test_the_default_topic_fills_missing_and_empty_topics():
    batch = pa.record_batch({"topic": ["a", None, ""], "key": [b"k"] * 3, "value": [b"1", b"2", b"3"]})
    assert [row[0] for row in rows([batch], default_topic="out")[0]] == ["a", "out", "out"]
    absent = pa.record_batch({"key": [b"k"], "value": [b"1"]})
    assert [row[0] for row in rows([absent], default_topic="out")[0]] == ["out"]


class FakeProducer:
    """Records what produce_arrow asks of librdkafka's producer; `full` BufferErrors first."""

    made: list["FakeProducer"] = []

    def __init__(self, config, full=0, unsent=0, fail=None, answers=1_000):
        self.config, self.produced, self.polls = config, [], 0
        self.full, self.unsent, self.fail, self.answers = full, unsent, fail, answers
        self.queued = 0
        FakeProducer.made.append(self)

    def __len__(self):
        return self.queued

    def produce(self, *args):
        if self.full:
            self.full -= 1
            raise BufferError("Local: Queue full")
        self.produced.append(args)
        self.queued += 1

    def poll(self, timeout):
        self.polls += 1

    def flush(self, timeout):
        if self.fail:
            self.config["on_delivery"](self.fail, FakeMessage())
        self.queued = self.unsent
        return self.unsent

    def list_topics(self, topic, timeout):
        self.answers -= 1
        if self.answers < 0:
            raise KafkaException(KafkaError(KafkaError._TRANSPORT))
        metadata = type("Topic", (), {"error": None, "partitions": {0: None, 1: None}})
        return type("Metadata", (), {"topics": {topic: metadata}})


class FakeMessage:
    def topic(self):
        return "out"

    def partition(self):
        return 1


@pytest.fixture
def producer(monkeypatch):
    """Which FakeProducer the next produce_arrow makes: `producer(**settings)`."""
    FakeProducer.made = []
    monkeypatch.setattr(rdkafka, "_KEPT", KeptProducers())  # none kept from an earlier test's writes

    def use(**settings):
        monkeypatch.setattr(rdkafka, "Producer", lambda config: FakeProducer(config, **settings))

    use()
    return use


SINK = pa.record_batch({"topic": ["out", "out", "out"], "key": [b"k", None, b"m"], "value": [b"1", b"2", b"3"],
                        "headers": pa.array([None, [{"key": "origin", "value": b"x"}], None], HEADERS),
                        "timestamp": pa.array([5, None, 7], pa.int64()).cast(pa.timestamp("ms"))})


def produce_sink_as_columns(config: dict, writer_id: str, batch_id, task: int = 0) -> int:
    """SINK's rows through produce_columns, as a task holds them."""
    headers = [None, (("origin", b"x"),), None]
    return rdkafka.produce_columns(config, ["out"] * 3, [b"k", None, b"m"], [b"1", b"2", b"3"], [5, None, 7],
                                   headers, writer_id, batch_id, task)


def produce_sink_as_arrow(config: dict, writer_id: str, batch_id, task: int = 0) -> int:
    return rdkafka.produce_arrow(config, [SINK], writer_id, batch_id, task=task)


@pytest.mark.parametrize("produce_sink", [produce_sink_as_arrow, produce_sink_as_columns])
def test_librdkafka_gets_positional_arguments_and_reports_only_failed_deliveries(producer, produce_sink):
    assert produce_sink({"bootstrap_servers": ["b:9092"]}, "w", 7, task=3) == 3
    (made,) = FakeProducer.made
    assert made.config["delivery.report.only.error"] is True and made.config["partitioner"] == "murmur2_random"
    assert made.produced == [
        ("out", b"1", b"k", -1, None, None, 5, {REPLAY_HEADER: b"w:7:3.0"}),
        ("out", b"2", None, (3 + 1) % 2, None, None, 0, [("origin", b"x"), (REPLAY_HEADER, b"w:7:3.1")]),
        ("out", b"3", b"m", -1, None, None, 7, {REPLAY_HEADER: b"w:7:3.2"})]


def test_a_process_keeps_its_producer_between_writes_until_one_fails(producer):
    config = {"bootstrap_servers": ["b:9092"]}
    assert produce_sink_as_columns(config, "w", 1) == produce_sink_as_arrow(config, "w", 2) == 3
    assert len(FakeProducer.made) == 1 and len(FakeProducer.made[0].produced) == 6
    FakeProducer.made[0].fail = KafkaError(KafkaError._MSG_TIMED_OUT)
    with pytest.raises(rdkafka.ProduceFailed):
        produce_sink_as_columns(config, "w", 3)
    assert produce_sink_as_columns(config, "w", 3) == 3  # the replay: a new producer, nothing failed
    assert len(FakeProducer.made) == 2 and len(FakeProducer.made[1].produced) == 3
    produce_sink_as_columns({"bootstrap_servers": ["c:9092"]}, "w", 4)  # other servers: their own
    assert len(FakeProducer.made) == 3


def test_a_full_local_queue_is_drained_and_the_record_sent_again(producer):
    producer(full=2)
    assert rdkafka.produce_arrow({"bootstrap_servers": ["b:9092"]}, [SINK], "w", None) == 3
    (made,) = FakeProducer.made
    assert [args[7] for args in made.produced] == [{REPLAY_HEADER: b"w:batch:0.0"},
                                                   [("origin", b"x"), (REPLAY_HEADER, b"w:batch:0.1")],
                                                   {REPLAY_HEADER: b"w:batch:0.2"}]
    assert made.polls >= 2


# A quick client timeout (0.05 s) and stall timeout (0.2 s) instead of 10 s and 30 s.
QUICK = {"bootstrap_servers": ["b:9092"], "bootstrap_timeout_ms": 50}


@pytest.mark.parametrize("settings, error, message", [
    # A broker answers but acknowledges 1 of 3, then nothing: given up at the stall timeout.
    ({"unsent": 2}, rdkafka.ProduceFailed, "2 of 3 records were not acknowledged: no progress for 0 s"),
    ({"fail": "Broker: Not enough in-sync replicas"}, rdkafka.ProduceFailed,
     "1 of 3 records were not acknowledged, e.g. out[1]: Broker: Not enough in-sync replicas"),
    # The partition count asked (1 answer), then silence and no broker answers: an outage, at the
    # client timeout, named as one.
    ({"unsent": 2, "answers": 1}, KafkaUnreachable, "cannot reach the Kafka brokers at b:9092: no answer within 0.05 s")])
def test_unacknowledged_records_fail_the_write(producer, monkeypatch, settings, error, message):
    monkeypatch.setattr(stall, "STALL_TIMEOUT_S", 0.2)
    producer(**settings)
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        rdkafka.produce_arrow(QUICK, [SINK], "w", 7)


@pytest.fixture
def kafka_python_sent(monkeypatch) -> dict:
    """What the kafka-python path was given, instead of a broker."""
    sent = {}

    class KafkaPython:
        def partitions_for(self, topic):
            return {0, 1}

        def close(self):
            sent["closed"] = True

    def send_all(producer, records, first_sequence):
        sent.update(records=records, first_sequence=first_sequence)
        return len(records)

    monkeypatch.setattr(kafka_python, "bulk_producer", lambda config: KafkaPython())
    monkeypatch.setattr(kafka_python, "send_all", send_all)
    return sent


def test_a_record_of_event_time_zero_sends_the_write_with_kafka_python(kafka_python_sent):
    batch = pa.record_batch({"key": [None, b"k"], "value": [b"1", b"2"],
                             "timestamp": pa.array([0, None], pa.int64()).cast(pa.timestamp("ms"))})
    assert rdkafka.produce_arrow({"bootstrap_servers": ["b:9092"]}, [batch], "w", 7, task=1,
                                 default_topic="out") == 2
    assert kafka_python_sent == {"closed": True, "first_sequence": 1, "records": [
        ("out", OutRecord(None, b"1", 0, ((REPLAY_HEADER, b"w:7:1.0"),), 1)),
        ("out", OutRecord(b"k", b"2", None, ((REPLAY_HEADER, b"w:7:1.1"),), None))]}


def test_a_task_column_of_event_time_zero_takes_kafka_python_too(kafka_python_sent):
    assert rdkafka.produce_columns({"bootstrap_servers": ["b:9092"]}, ["out", "out"], [None, b"k"], [b"1", b"2"],
                                   [0, None], [None, None], "w", 7, 1) == 2
    assert kafka_python_sent == {"closed": True, "first_sequence": 1, "records": [
        ("out", OutRecord(None, b"1", 0, ((REPLAY_HEADER, b"w:7:1.0"),), 1)),
        ("out", OutRecord(b"k", b"2", None, ((REPLAY_HEADER, b"w:7:1.1"),), None))]}
