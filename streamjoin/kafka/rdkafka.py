"""The data path on librdkafka (confluent-kafka): what reads a query's input records and writes its
results. Offset lookups run on librdkafka too (`offsets.OffsetClient`: every query start makes
them). kafka-python keeps the rest of the control path: topic administration and the small
writes of samples, dead letters and tests (`admin`, `producer`).

Why librdkafka here: measured on the embedded broker (2 cores), it produced ~294k msg/s and
consumed ~193k msg/s from a Python loop; kafka-python produced 12-16k msg/s inside the sink and
read ~80k msg/s, and its pure-Python partitioner and CRC checks cost more than the network.
`produce_arrow`, which adds a timestamp and the replay header to every record, sends ~150-250k
records/s there (`bench/produce.py`).

Both clients take the same settings (`streamjoin.kafka.client.kafka_client_config`);
`client.rdkafka_config` translates them. librdkafka's `murmur2_random` partitioner is Kafka's
default partitioner for keyed records (checked against ours: `murmur2.default_partition`);
keyless records keep our deterministic round-robin, so a replayed batch lands where the first
attempt did.
"""

from __future__ import annotations

import time
from itertools import repeat
from typing import Callable, Iterable, Iterator, NamedTuple

import pyarrow as pa
import pyarrow.compute as pc
from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from streamjoin.kafka.client import END_OF_LOG_WAIT_MS, rdkafka_config
from streamjoin.kafka.kept import KeptProducers
from streamjoin.kafka.limits import KAFKA_DEFAULT_LIMIT
from streamjoin.kafka.murmur2 import choose_partition
from streamjoin.kafka.stall import STALL_TIMEOUT_S, Stall
from streamjoin.runtime.contract import REPLAY_HEADER



class ProduceFailed(RuntimeError):
    """Some records of a write were not acknowledged: the batch is not committed and is replayed."""


def produce_arrow(client_config: dict, batches: Iterable[pa.RecordBatch], writer_id: str, batch_id,
                  task: int = 0, default_topic: str | None = None, max_bytes: int = KAFKA_DEFAULT_LIMIT) -> int:
    """Produce Arrow rows with the columns of Spark's Kafka sink (value; optional key, topic,
    partition, headers, timestamp) and wait for every acknowledgement; raise ProduceFailed
    otherwise (at-least-once: nothing is lost silently). Each record carries the replay header
    "<writer_id>:<batch_id>:<task>.<seq>": a replayed batch carries the same ids.

    librdkafka reads a timestamp of 0 as "now", so a write holding a record of event time 0
    (1970-01-01T00:00:00Z) goes through kafka-python instead, which sends it as it is; the whole
    write takes one client, so the records of a partition keep their order. `max_bytes`: the
    largest record batch the topics take (`limits.topic_limit`); a record past it fails the write."""
    batches = list(batches)
    epoch_zero = any(pc.any(pc.equal(_epoch_ms(batch), 0)).as_py()
                     for batch in batches if "timestamp" in batch.schema.names)
    id_prefix = _id_prefix(writer_id, batch_id, task)
    return _send(client_config, lambda count: _records(batches, id_prefix, default_topic, task, count),
                 epoch_zero, task, max_bytes)


def produce_columns(client_config: dict, topics: list, keys: list, values: list, timestamps: list,
                    headers: list, writer_id: str, batch_id, task: int, max_bytes: int = KAFKA_DEFAULT_LIMIT) -> int:
    """`produce_arrow` for records already held as Python columns (a task's results: no Arrow
    to build and read back); timestamps in epoch ms, headers a record's (key, bytes) pairs or None."""
    return _send(client_config, columns_of(topics, keys, values, timestamps, headers, writer_id, batch_id, task),
                 0 in timestamps, task, max_bytes)


def _id_prefix(writer_id: str, batch_id, task: int) -> bytes:
    return f"{writer_id}:{batch_id if batch_id is not None else 'batch'}:{task}.".encode()


# A write's rows as _Columns, given how to look up a topic's partition count.
RowSource = Callable[[Callable[[str], int]], Iterable["_Columns"]]


def _send(client_config: dict, columns: RowSource, epoch_zero: bool, task: int, max_bytes: int) -> int:
    if epoch_zero:
        return _send_with_kafka_python(client_config, columns, task)
    key = (repr(sorted(client_config.items())), max_bytes)
    producer, failures = _KEPT.take(key, lambda: _kept_producer(client_config, max_bytes))
    failures.clear()
    try:
        stall = Stall(client_config, producer)
        sent = produce_rows(producer, columns, stall)
        await_acknowledgements(producer, sent, failures, stall)
    except BaseException:
        _KEPT.drop(key)  # it may still hold records of this write: the next write starts afresh
        raise
    _KEPT.release(key)
    return sent


_KEPT = KeptProducers()


def _kept_producer(client_config: dict, max_bytes: int) -> tuple[Producer, list[str]]:
    failures: list[str] = []
    return new_producer(client_config, max_bytes, failures), failures


def new_producer(client_config: dict, max_bytes: int, failures: list[str], **extra) -> Producer:
    """A librdkafka producer for a write's records; a failed delivery appends its reason to
    `failures`. `extra`: more librdkafka settings (a transactional producer's)."""

    def delivered(error, message) -> None:
        failures.append(f"{message.topic()}[{message.partition()}]: {error}")

    # Only failed deliveries call back into Python (a successful one would cost a Message object
    # and a call per record); flush() still waits for every acknowledgement. A record batch never
    # outgrows what the topics take (librdkafka's own defaults are 1,000,000 bytes).
    return Producer({**rdkafka_config(client_config), "partitioner": "murmur2_random", "acks": "all",
                     "message.max.bytes": max_bytes, "batch.size": min(max_bytes, 1_000_000),
                     "linger.ms": 20, "batch.num.messages": 10_000, "queue.buffering.max.messages": 500_000,
                     "queue.buffering.max.kbytes": 512 * 1024, "on_delivery": delivered,
                     "delivery.report.only.error": True, **extra})


def produce_rows(producer: Producer, columns: RowSource, stall: Stall) -> int:
    """Hands every row of `columns` to `producer` (with its replay header); how many. A queue
    that stays full (no acknowledgements: `stall`) is ProduceFailed or KafkaUnreachable."""
    counts: dict[str, int] = {}

    def partition_count(topic: str) -> int:
        if topic not in counts:
            counts[topic] = _partition_count(producer, topic, stall)
        return counts[topic]

    produce, sent = producer.produce, 0
    for rows in columns(partition_count):
        for topic, value, key, partition, timestamp, given, replay_id in zip(*rows):
            # Positional (topic, value, key, partition, callback, on_delivery, timestamp, headers):
            # faster to parse than keywords. -1 and 0 are librdkafka's "its partitioner" and "now";
            # a dict of headers is faster for it to read than a list of pairs.
            headers = [*given, (REPLAY_HEADER, replay_id)] if given else {REPLAY_HEADER: replay_id}
            try:
                produce(topic, value, key, -1 if partition is None else partition, None, None, timestamp or 0, headers)
            except BufferError:  # the local queue is full: let deliveries drain it
                _produce_when_room(producer, (topic, value, key, -1 if partition is None else partition, None, None,
                                              timestamp or 0, headers), stall)
            sent += 1
        producer.poll(0)  # serve the delivery reports so far: their records leave the queue
    return sent


def await_acknowledgements(producer: Producer, sent: int, failures: list[str], stall: Stall) -> None:
    """Waits for every record's acknowledgement while they keep coming (`stall`); ProduceFailed
    when one is missing or failed, KafkaUnreachable when the brokers went away."""
    waiting = len(producer)
    while waiting:
        unsent = producer.flush(0.5)
        if unsent < waiting:
            waiting = unsent
            stall.progressed()
        elif stall.expired():
            break
    if waiting or failures:
        raise ProduceFailed(f"{waiting + len(failures)} of {sent} records were not acknowledged"
                            + (f", e.g. {failures[0]}" if failures else
                               f": no progress for {time.monotonic() - stall.last_progress:.0f} s"))


def columns_of(topics: list, keys: list, values: list, timestamps: list, headers: list, writer_id: str,
               batch_id, task: int) -> RowSource:
    """A task's results held as Python columns, as the rows of a write (`produce_columns`)."""
    id_prefix = _id_prefix(writer_id, batch_id, task)
    return lambda count: [_columns(topics, values, keys, None, timestamps, headers, id_prefix, 0, task, count)]


class _Columns(NamedTuple):
    """Rows of a write (an Arrow batch, or a task's results), column by column (no object per
    row). partitions: None where Kafka's partitioner places a keyed row. timestamps: epoch ms,
    None where none is given. headers: the given (key, value) pairs of each row, None for none.
    replay_ids: the value of each row's replay header."""

    topics: list
    values: list
    keys: Iterable
    partitions: Iterable
    timestamps: Iterable
    headers: Iterable
    replay_ids: list


def _records(batches: Iterable[pa.RecordBatch], id_prefix: bytes, default_topic: str | None, task: int,
             partition_count: Callable[[str], int]) -> Iterator[_Columns]:
    """The _Columns of each batch; replay ids number the rows of the write from 0."""
    sequence = 0
    for batch in batches:
        rows, column = batch.num_rows, {name: batch.column(name) for name in batch.schema.names}
        topics = [default_topic] * rows
        if "topic" in column:
            topics = column["topic"].to_pylist()
            if default_topic is not None:
                topics = [topic or default_topic for topic in topics]
        keys = column["key"].to_pylist() if "key" in column else [None] * rows
        explicit = column["partition"].to_pylist() if "partition" in column else None
        headers = repeat(None)
        if "headers" in column and column["headers"].null_count < rows:
            headers = [[(h["key"], h["value"]) for h in row] if row else None
                       for row in column["headers"].to_pylist()]
        yield _columns(topics, column["value"].to_pylist(), keys, explicit,
                       _epoch_ms(batch).to_pylist() if "timestamp" in column else repeat(None), headers,
                       id_prefix, sequence, task, partition_count)
        sequence += rows


def _columns(topics: list, values: list, keys: list, explicit: list | None, timestamps: Iterable,
             headers: Iterable, id_prefix: bytes, first: int, task: int,
             partition_count: Callable[[str], int]) -> _Columns:
    """Rows numbered from `first` in the write. Keyless rows without a partition go round-robin
    by that number, from the task number on (`choose_partition`)."""
    if explicit is None and None not in keys:
        partitions = repeat(None)  # all keyed: the partitioner places every row
    else:
        partitions = [choose_partition(None, partition_count(topic), task + first + row)
                      if partition is None and key is None else partition
                      for row, (topic, key, partition) in enumerate(zip(topics, keys, explicit or repeat(None)))]
    return _Columns(topics, values, keys, partitions, timestamps, headers,
                    list(map((id_prefix.replace(b"%", b"%%") + b"%d").__mod__, range(first, first + len(values)))))


def _epoch_ms(batch: pa.RecordBatch) -> pa.Array:
    """The timestamp column (Arrow timestamps; Spark's are microseconds) as epoch ms."""
    stamps = batch.column("timestamp")
    return stamps.cast(pa.timestamp("ms", tz=stamps.type.tz), safe=False).cast(pa.int64())


def _send_with_kafka_python(client_config: dict, columns: RowSource, task: int) -> int:
    # Imported here: every Spark write task imports this module, and kafka-python (~0.85 s a
    # Python worker) is needed only by this rare fallback.
    from streamjoin.kafka import producer as kafka_python
    from streamjoin.kafka.records import OutRecord

    producer = kafka_python.bulk_producer(client_config)
    try:
        records = [(topic, OutRecord(key, value, timestamp, (*(given or ()), (REPLAY_HEADER, replay_id)),
                                     partition))
                   for rows in columns(lambda topic: kafka_python.partition_count(producer, topic))
                   for topic, value, key, partition, timestamp, given, replay_id in zip(*rows)]
        return kafka_python.send_all(producer, records, first_sequence=task)
    finally:
        producer.close()


def _produce_when_room(producer: Producer, args: tuple, stall: Stall) -> None:
    stall.progressed()
    while True:
        producer.poll(0.05)
        try:
            producer.produce(*args)
            return
        except BufferError:
            if stall.expired():
                raise ProduceFailed(f"the producer's queue stayed full for {STALL_TIMEOUT_S:g} s "
                                    "(no acknowledgements)") from None


def _partition_count(producer: Producer, topic: str, stall: Stall) -> int:
    try:
        found = producer.list_topics(topic, timeout=stall.timeout_s).topics.get(topic)
    except KafkaException:
        raise stall.unreachable() from None
    if found is None or found.error is not None or not found.partitions:
        raise ValueError(f"Kafka topic {topic!r} does not exist")
    return len(found.partitions)


# How long one read of a range waits for its records: short, since a read asks for the range's
# offsets and some may hold no record a consumer is given (a transaction's marker) and never fill it.
_RANGE_WAIT_S = 0.02


def _log_end(message: Message) -> bool:
    """Whether `message` is the consumer's end-of-log event (its offset: the log's end); any other
    error is raised."""
    error = message.error()
    if error is None:
        return False
    if error.code() == KafkaError._PARTITION_EOF:
        return True
    raise KafkaException(error)


def read_range(client_config: dict, topic: str, partition: int, start: int, end: int,
               chunk: int = 20_000) -> Iterator[list[Message]]:
    """The records of one partition with start <= offset < end, in offset order, in chunks.
    Offsets may have gaps (transaction markers, compaction): the range ends when the reader's
    position reaches `end`, or the log's end does (a range ending in a transaction's marker, which
    no consumer is given: the reader learns the end from the partition's end-of-log event instead
    of waiting out a fetch). A start the log no longer holds is an error, never a silent skip
    (`auto.offset.reset=error`); so is a broker that stops delivering (TimeoutError)."""
    if start >= end:
        return
    consumer = Consumer({**rdkafka_config(client_config), "group.id": "streamjoin-range-reader",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "fetch.wait.max.ms": END_OF_LOG_WAIT_MS,
                         "auto.offset.reset": "error", "fetch.max.bytes": 64 * 1024 * 1024,
                         "max.partition.fetch.bytes": 16 * 1024 * 1024})
    tp = TopicPartition(topic, partition, start)
    try:
        consumer.assign([tp])
        position, stall = start, Stall(client_config, consumer, topic)
        while position < end:
            messages = consumer.consume(num_messages=min(chunk, end - position), timeout=_RANGE_WAIT_S)
            records, log_ends = [], []
            for message in messages:
                (log_ends if _log_end(message) else records).append(message)
            wanted = [message for message in records if message.offset() < end]
            if wanted:
                position = wanted[-1].offset() + 1
                stall.progressed()
                yield wanted
            if len(wanted) < len(records):  # records past the end
                return
            if log_ends:  # at the log's end: nothing more before it
                position = max(position, log_ends[-1].offset())
            elif not messages:
                position = max(position, consumer.position([tp])[0].offset)
                if position < end and stall.expired():
                    raise TimeoutError(f"{topic}[{partition}]: stuck at offset {position} before end {end}")
    finally:
        consumer.close()

