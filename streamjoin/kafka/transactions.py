"""Exactly-once output to Kafka: one task's results of one micro-batch in one Kafka transaction,
together with a marker of (query, step, task, batch), on a broker that honours transactions
(Apache Kafka; `embedded.BrokerKind.KAFKA` and any real cluster). Tansu accepts transactional
producers but does not honour aborts, so there the output stays at-least-once with the replay
header (`OutputGuarantee`).

`TransactionalBatchProducer` is what a task-side sink calls once per task and batch:

1. `init_transactions` with the transactional id of (query, step, task): it fences any older
   producer of that id (a zombie task still running after Spark gave up on it, or one of a killed
   process) and finishes that producer's open transaction (aborted, or completed when its commit
   had begun), so what is committed is settled before the next step looks;
2. it reads the task's last committed marker (`read_committed`) from its own partition of the
   step's marker topic: when that marker is of the same writer (query@checkpoint epoch) and of
   this batch or a later one, the batch was committed before Spark could note it (a kill between
   the Kafka commit and Spark's) and nothing is produced again;
3. otherwise it produces the results and the marker in one transaction and commits it.

A `read_committed` consumer then sees every result exactly once. (A write holding a record of event
time 0 takes the at-least-once path: librdkafka reads a timestamp of 0 as "now", `rdkafka`.) Every record keeps its replay
header, so a `read_uncommitted` reader can still drop the copies of aborted attempts.

Each task's markers have a partition of their own (partition = task), so no other producer's open
transaction holds the partition's last stable offset back: after step 1 every marker it holds is
settled. The marker topic is compacted (its key is the task's), created on first use.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from enum import Enum
from functools import cache

from confluent_kafka import KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from streamjoin.kafka.client import rdkafka_config
from streamjoin.runtime.contract import REPLAY_HEADER
from streamjoin.kafka.limits import KAFKA_DEFAULT_LIMIT
from streamjoin.kafka.stall import STALL_TIMEOUT_S, Stall
from streamjoin.kafka.rdkafka import (
    ProduceFailed,
    await_acknowledgements,
    columns_of,
    new_producer,
    produce_columns,
    produce_rows,
    read_range,
)

# (bootstrap servers, marker topic) -> the partitions this process saw it have. Forgotten when a
# write fails, so a topic deleted meanwhile (a query reset) is made again by the task's retry.
_MARKER_PARTITIONS: dict[tuple[str, str], int] = {}
MARKER_WINDOW = 16  # offsets read back from a marker partition's end at a time (a commit takes 2)
TRANSACTION_TIMEOUT_MS = 60_000  # the broker aborts a transaction its producer left open this long


class OutputGuarantee(Enum):
    """What a query's Kafka output promises, by broker."""

    EXACTLY_ONCE = "exactly-once"  # transactions: read it with isolation.level=read_committed
    AT_LEAST_ONCE = "at-least-once"  # replayed batches' copies carry the same replay header

    @property
    def exactly_once(self) -> bool:
        return self is OutputGuarantee.EXACTLY_ONCE


@dataclass(frozen=True)
class TaskIdentity:
    """Who writes: a query's step (sub-topology, named after its sink topic), one task of it, and
    the writer id "<query>@<checkpoint epoch>" (one checkpoint's lifetime: its batch ids)."""

    query: str
    step: str
    task: int
    writer_id: str

    @property
    def transactional_id(self) -> str:
        return f"streamjoin.{self.query}.{self.step}.{self.task}"

    @property
    def marker_topic(self) -> str:
        return marker_topic(self.query, self.step)

    @property
    def marker_key(self) -> bytes:
        return f"{self.query}/{self.step}/{self.task}".encode()

    def marker(self, batch: int, records: int) -> bytes:
        return json.dumps({"writer": self.writer_id, "batch": batch, "records": records}).encode()

    def committed(self, marker: bytes | None, batch: int) -> int | None:
        """How many records the committed batch `batch` produced, when `marker` (the task's last
        committed one) says it was committed; else None."""
        if marker is None:
            return None
        noted = json.loads(marker)
        if noted["writer"] != self.writer_id or noted["batch"] < batch:
            return None
        return noted["records"] if noted["batch"] == batch else 0


def output_guarantee(tansu: bool) -> OutputGuarantee:
    """At-least-once on Tansu (it accepts transactions without honouring aborts; `tansu`: the
    brokers say they are, `OffsetClient.is_tansu`); exactly-once on every other broker (Apache
    Kafka, Confluent Platform, MSK, Redpanda: all honour them)."""
    return OutputGuarantee.AT_LEAST_ONCE if tansu else OutputGuarantee.EXACTLY_ONCE


def guarantee_notice(guarantee: OutputGuarantee, query: str) -> str:
    """The one line a run says at its start about its Kafka output."""
    if guarantee is OutputGuarantee.EXACTLY_ONCE:
        return (f"{query}: Kafka output is exactly-once (one transaction per task and batch): read it with "
                "isolation.level=read_committed")
    return (f"{query}: Kafka output is at-least-once (the Tansu broker does not honour transaction "
            f"aborts): a replayed batch's copies carry the same {REPLAY_HEADER} header; drop them with "
            "streamjoin.kafka.records.dedupe_replayed")


def marker_topic(query: str, step: str) -> str:
    return f"streamjoin-commits.{query}.{step}"


class TransactionalBatchProducer:
    """Produces one task's results of one batch exactly once (see the module docstring).

    Steps 1 and 2 (the marker partition, a producer, `init_transactions`, the last marker: ~80 ms
    and more right after a commit) need nothing of the results, so a task may start them when its
    batch starts (`open_early`) and they run while it processes:

        0 ms     open_early(7): a background thread inits the producer and reads the marker
        0-90 ms  the task decodes, joins and encodes its batch
        90 ms    produce_columns(7, ...): takes the opened producer (done), produces, commits

    Fencing keeps this exactly-once: once `init_transactions` returned, any other producer of the
    id is fenced and its transaction settled, and a later one would fence this one and fail its
    commit, so the marker read then is still the last committed one when the batch commits."""

    def __init__(self, client_config: dict, identity: TaskIdentity, max_bytes: int = KAFKA_DEFAULT_LIMIT,
                 timeout_s: float = STALL_TIMEOUT_S) -> None:
        self.client_config = client_config
        self.identity = identity
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.opening: tuple[int, Future] | None = None

    def open_early(self, batch: int) -> None:
        """Starts steps 1 and 2 for `batch` in the background (`produce_columns` takes them up)."""
        self.opening = (batch, _background().submit(self._open, batch))

    def _opened(self, batch: int) -> tuple[Producer, list[str], int | None]:
        opening, self.opening = self.opening, None
        return opening[1].result() if opening is not None and opening[0] == batch else self._open(batch)

    def _open(self, batch: int) -> tuple[Producer, list[str], int | None]:
        """Steps 1 and 2: the producer, its failed deliveries, and the records of `batch` when an
        earlier attempt committed it (else None)."""
        ensure_marker_partition(self.client_config, self.identity, self.timeout_s)
        failures: list[str] = []
        producer = new_producer(self.client_config, self.max_bytes, failures,
                                **{"transactional.id": self.identity.transactional_id, "enable.idempotence": True,
                                   "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS})
        try:
            producer.init_transactions(self.timeout_s)
            marker = last_marker(self.client_config, self.identity, self.timeout_s)
        except (KafkaException, ProduceFailed) as error:
            raise self._failed(batch, error, producer) from None
        return producer, failures, self.identity.committed(marker, batch)

    def _failed(self, batch: int, error: Exception, producer: Producer) -> ProduceFailed:
        """The one-line error of a failed write, its transaction aborted and the marker topic
        looked up again by the retry (a topic deleted meanwhile, a query reset, is made again)."""
        _MARKER_PARTITIONS.pop(_marker_topic_seen(self.client_config, self.identity), None)
        _abort(producer, self.timeout_s)
        return ProduceFailed(f"{self.identity.transactional_id}: batch {batch} not committed: {_reason(error)}")

    def produce_columns(self, batch: int, topics: list, keys: list, values: list, timestamps: list,
                        headers: list) -> int:
        """The task's results of `batch` as Python columns (as `rdkafka.produce_columns` takes
        them); how many records the batch's committed transaction holds (this call's, or an earlier
        attempt's when it had committed)."""
        identity = self.identity
        if 0 in timestamps:  # librdkafka reads 0 as "now": such a write keeps kafka-python's at-least-once path
            return produce_columns(self.client_config, topics, keys, values, timestamps, headers,
                                   identity.writer_id, batch, identity.task, self.max_bytes)
        producer, failures, done = self._opened(batch)
        if done is not None:
            return done
        try:
            producer.begin_transaction()
            stall = Stall(self.client_config, producer)  # brokers gone: KafkaUnreachable (the broker aborts)
            sent = produce_rows(producer, columns_of(topics, keys, values, timestamps, headers,
                                                     identity.writer_id, batch, identity.task), stall)
            producer.produce(identity.marker_topic, identity.marker(batch, sent), identity.marker_key,
                             identity.task)
            await_acknowledgements(producer, sent + 1, failures, stall)
            producer.commit_transaction(self.timeout_s)
            return sent
        except (KafkaException, ProduceFailed) as error:
            raise self._failed(batch, error, producer) from None
        except SystemError as error:
            # Fenced while flush() serves delivery reports: confluent-kafka raises the fatal
            # KafkaException from inside the report's callback, as a SystemError caused by it.
            if not isinstance(error.__cause__, KafkaException):
                raise
            raise self._failed(batch, error.__cause__, producer) from None


@cache
def _background() -> ThreadPoolExecutor:
    """The threads that open transactions early: made on first use, in the task's own process."""
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="streamjoin-transactions")


def _abort(producer, timeout_s: float) -> None:
    """Aborts the open transaction, if any (a fenced producer cannot: its successor already did)."""
    try:
        producer.abort_transaction(timeout_s)
    except KafkaException:
        pass


def _reason(error: Exception) -> str:
    if isinstance(error, KafkaException) and error.args:
        kafka_error = error.args[0]
        if hasattr(kafka_error, "str"):
            return kafka_error.str()
    return str(error)


def last_marker(client_config: dict, identity: TaskIdentity, timeout_s: float = STALL_TIMEOUT_S) -> bytes | None:
    """The value of the task's last committed marker, read back from its partition's end a window
    at a time (`read_committed`: aborted markers are skipped); None when it has none."""
    from confluent_kafka import Consumer

    consumer = Consumer({**rdkafka_config(client_config), "group.id": "streamjoin-markers",
                         "isolation.level": "read_committed"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition(identity.marker_topic, identity.task),
                                                   timeout=timeout_s)
    finally:
        consumer.close()
    end = high
    while end > low:
        start = max(low, end - MARKER_WINDOW)
        found = [message.value() for chunk in read_range(client_config, identity.marker_topic, identity.task,
                                                         start, end)
                 for message in chunk if message.key() == identity.marker_key]
        if found:
            return found[-1]
        end = start
    return None


def _marker_topic_seen(client_config: dict, identity: TaskIdentity) -> tuple[str, str]:
    return rdkafka_config(client_config).get("bootstrap.servers", ""), identity.marker_topic


def ensure_marker_partition(client_config: dict, identity: TaskIdentity, timeout_s: float) -> None:
    """The step's marker topic with a partition for the task (created, or grown, on first use;
    another task may be doing the same at once). What this process saw of it is remembered
    (`_MARKER_PARTITIONS`): looking costs an admin client and a metadata request, ~55 ms a batch."""
    seen = _marker_topic_seen(client_config, identity)
    topic, wanted = identity.marker_topic, identity.task + 1
    if _MARKER_PARTITIONS.get(seen, 0) >= wanted:
        return
    admin = AdminClient(rdkafka_config(client_config))
    deadline = time.monotonic() + timeout_s
    while True:
        found = admin.list_topics(topic, timeout=timeout_s).topics.get(topic)
        count = len(found.partitions) if found is not None and found.error is None else 0
        if count >= wanted:
            _MARKER_PARTITIONS[seen] = count
            return
        if time.monotonic() > deadline:
            raise ProduceFailed(f"the marker topic {topic} has {count} partitions, task {identity.task} needs {wanted}")
        if count == 0:
            futures = admin.create_topics([NewTopic(topic, wanted, config={"cleanup.policy": "compact"})])
        else:
            futures = admin.create_partitions([NewPartitions(topic, wanted)])
        for future in futures.values():
            try:
                future.result(timeout_s)
            except KafkaException:
                time.sleep(0.2)  # created or grown by another task meanwhile: look again
