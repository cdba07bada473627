"""The data path on librdkafka (confluent-kafka): what reads a query's input records and writes its
results. The control path (admin, offsets, lag, samples, dead letters) stays on kafka-python
(`admin`, `offsets`): one client per role.

Why two clients: measured on the embedded broker (2 cores), librdkafka produced ~294k msg/s and
consumed ~193k msg/s from a Python loop; kafka-python produced 12-16k msg/s inside the sink and
read ~80k msg/s, and its pure-Python partitioner and CRC checks cost more than the network.

Both clients take the same settings (`streamjoin.kafka.client.kafka_client_config`); `rdkafka_config`
translates them. librdkafka's `murmur2_random` partitioner is Kafka's default partitioner for
keyed records (checked against ours: `murmur2.default_partition`); keyless records keep our
deterministic round-robin, so a replayed batch lands where the first attempt did.
"""

from __future__ import annotations

import time
from typing import Iterable, Iterator

import pyarrow as pa
from confluent_kafka import Consumer, KafkaException, Message, Producer, TopicPartition

from streamjoin.kafka.producer import bulk_producer, choose_partition, send_all
from streamjoin.kafka.records import REPLAY_HEADER, OutRecord

STALL_TIMEOUT_S = 30.0  # no progress for this long while reading a range that must exist -> error
_KWARG_TO_RDKAFKA = {"security_protocol": "security.protocol", "sasl_mechanism": "sasl.mechanism",
                     "sasl_plain_username": "sasl.username", "sasl_plain_password": "sasl.password"}


def rdkafka_config(client_config: dict) -> dict:
    """librdkafka configuration from kafka-python keyword arguments (`kafka_client_config`)."""
    config = {"bootstrap.servers": ",".join(client_config["bootstrap_servers"]), "log_level": 3}
    if "bootstrap_timeout_ms" in client_config:
        config["socket.connection.setup.timeout.ms"] = client_config["bootstrap_timeout_ms"]
    config.update({_KWARG_TO_RDKAFKA[k]: v for k, v in client_config.items() if k in _KWARG_TO_RDKAFKA})
    return config


class ProduceFailed(RuntimeError):
    """Some records of a write were not acknowledged: the batch is not committed and is replayed."""


def produce_arrow(client_config: dict, batches: Iterable[pa.RecordBatch], writer_id: str, batch_id,
                  task: int = 0, default_topic: str | None = None) -> int:
    """Produce Arrow rows with the columns of Spark's Kafka sink (value; optional key, topic,
    partition, headers, timestamp) and wait for every acknowledgement; raise ProduceFailed
    otherwise (at-least-once: nothing is lost silently). Each record carries the replay header
    "<writer_id>:<batch_id>:<task>.<seq>": a replayed batch carries the same ids.

    librdkafka reads a timestamp of 0 as "now", so a write holding a record of event time 0
    (1970-01-01T00:00:00Z) goes through kafka-python instead, which sends it as it is; the whole
    write takes one client, so the records of a partition keep their order."""
    id_prefix = f"{writer_id}:{batch_id if batch_id is not None else 'batch'}:{task}."
    records = list(_records(batches, id_prefix, default_topic))
    if any(record.timestamp_ms == 0 for _, record in records):
        producer = bulk_producer(client_config)
        try:
            return send_all(producer, records, first_sequence=task)
        finally:
            producer.close()
    producer = Producer({**rdkafka_config(client_config), "partitioner": "murmur2_random", "acks": "all",
                         "linger.ms": 20, "batch.num.messages": 10_000, "queue.buffering.max.messages": 500_000,
                         "queue.buffering.max.kbytes": 512 * 1024})
    failures: list[str] = []

    def delivered(error, message) -> None:
        if error is not None:
            failures.append(f"{message.topic()}[{message.partition()}]: {error}")

    partitions_of: dict[str, int] = {}
    for sequence, (topic, record) in enumerate(records):
        partition = record.partition
        if partition is None and record.key is None:  # round-robin by position, from the task number on
            if topic not in partitions_of:
                partitions_of[topic] = _partition_count(producer, topic)
            partition = choose_partition(None, partitions_of[topic], task + sequence)
        options = {"key": record.key, "value": record.value, "headers": list(record.headers),
                   "on_delivery": delivered}
        if partition is not None:
            options["partition"] = partition
        if record.timestamp_ms is not None:
            options["timestamp"] = record.timestamp_ms
        _produce(producer, topic, options)
    unsent = producer.flush(STALL_TIMEOUT_S)
    if unsent or failures:
        raise ProduceFailed(f"{unsent + len(failures)} of {len(records)} records were not acknowledged"
                            + (f", e.g. {failures[0]}" if failures else f" within {STALL_TIMEOUT_S:g} s"))
    return len(records)


def _records(batches: Iterable[pa.RecordBatch], id_prefix: str,
             default_topic: str | None) -> Iterator[tuple[str, OutRecord]]:
    """(topic, record) for every row, with its replay header."""
    sequence = 0
    for batch in batches:
        columns = {name: batch.column(name).to_pylist() for name in batch.schema.names}
        if "timestamp" in columns:  # Arrow timestamps (Spark: microseconds) -> epoch ms
            timestamps = batch.column("timestamp")
            columns["timestamp"] = timestamps.cast(pa.timestamp("ms", tz=timestamps.type.tz), safe=False) \
                .cast(pa.int64()).to_pylist()
        absent = [None] * batch.num_rows
        topics, keys, partitions, headers, stamps = (columns.get(name, absent) for name in
                                                      ("topic", "key", "partition", "headers", "timestamp"))
        for row, value in enumerate(columns["value"]):
            given = tuple((h["key"], h["value"]) for h in headers[row] or ())
            yield topics[row] or default_topic, OutRecord(
                keys[row], value, stamps[row], (*given, (REPLAY_HEADER, f"{id_prefix}{sequence}".encode())),
                partitions[row])
            sequence += 1


def _produce(producer: Producer, topic: str, options: dict) -> None:
    while True:
        try:
            producer.produce(topic, **options)
            return
        except BufferError:  # the local queue is full: let deliveries drain it
            producer.poll(0.05)


def _partition_count(producer: Producer, topic: str) -> int:
    found = producer.list_topics(topic, timeout=STALL_TIMEOUT_S).topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise ValueError(f"Kafka topic {topic!r} does not exist")
    return len(found.partitions)


def read_range(client_config: dict, topic: str, partition: int, start: int, end: int,
               chunk: int = 20_000) -> Iterator[list[Message]]:
    """The records of one partition with start <= offset < end, in offset order, in chunks.
    Offsets may have gaps (transaction markers, compaction): the range ends when the reader's
    position reaches `end`. A start the log no longer holds is an error, never a silent skip
    (`auto.offset.reset=error`); so is a broker that stops delivering (TimeoutError)."""
    if start >= end:
        return
    consumer = Consumer({**rdkafka_config(client_config), "group.id": "streamjoin-range-reader",
                         "enable.auto.commit": False, "enable.partition.eof": False,
                         "auto.offset.reset": "error", "fetch.max.bytes": 64 * 1024 * 1024,
                         "max.partition.fetch.bytes": 16 * 1024 * 1024})
    tp = TopicPartition(topic, partition, start)
    try:
        consumer.assign([tp])
        position, last_progress = start, time.monotonic()
        while position < end:
            messages = consumer.consume(num_messages=min(chunk, end - position), timeout=0.2)
            wanted = []
            for message in messages:
                if message.error() is not None:
                    raise KafkaException(message.error())
                if message.offset() >= end:
                    break
                wanted.append(message)
            if wanted:
                position, last_progress = wanted[-1].offset() + 1, time.monotonic()
                yield wanted
            elif messages:  # only records past the end
                return
            else:
                position = max(position, consumer.position([tp])[0].offset)
                if position < end and time.monotonic() - last_progress > STALL_TIMEOUT_S:
                    raise TimeoutError(f"{topic}[{partition}]: stuck at offset {position} before end {end}")
    finally:
        consumer.close()

