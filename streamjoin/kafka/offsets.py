"""Consumer-level offset work shared by the admin helpers and the Spark source, on librdkafka: the
partitions of named topics, log start and end offsets that are correct on Tansu, and timestamp ->
offset lookups that are correct on Tansu.

Tansu quirks handled here:
- ListOffsets(LATEST) answers an offset behind the log end (one past the base offset of the last
  record batch; under load, thousands of records behind). On Tansu (known by its cluster id) we
  fetch from there: the fetch response carries the true end (its high watermark). Apache Kafka's
  answer is the end, taken as it is.
- ListOffsets(timestamp) answers by append time, ignoring record timestamps. We check the answer
  against the record it points to and otherwise scan for the first record at or after the time.

Why librdkafka (it was kafka-python): the planning process of every Spark query start looks its
offsets up here, and kafka-python's import and pure-Python decoding were ~0.35-0.47 CPU-s of it
against ~0.15 on librdkafka (docs/operations.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Mapping, NamedTuple

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as RdTopicPartition

from streamjoin.kafka.client import END_OF_LOG_WAIT_MS, KafkaUnreachable, client_timeout_s, rdkafka_config
from streamjoin.kinds import DATA_LOSS_POLICIES

STALL_TIMEOUT_S = 30.0  # no answer or progress for this long -> error
_EARLIEST, _LATEST = -2, -1  # ListOffsets' special timestamps
_OUT_OF_RANGE = (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE)
_LOOKUP_CONFIG = {"group.id": "streamjoin-offsets", "enable.auto.commit": False}
# librdkafka's "no broker answered": the brokers are down or unreachable, not a wrong request
_UNREACHABLE = (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT)
# A lookup that lost its broker (stopped or crashed in a cluster) while the others may answer
_BROKER_GONE = (KafkaError._DESTROY_BROKER, KafkaError._TRANSPORT)
# a partition's leader is not ready yet: worth asking again
_LEADER_MOVING = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)
TANSU_CLUSTER_ID = "tansu_cluster"  # what a Tansu broker reports unless started with another id
# A fetch at the log end must answer at once: it is what carries the end.
_FETCH_CONFIG = {**_LOOKUP_CONFIG, "auto.offset.reset": "error", "fetch.wait.max.ms": END_OF_LOG_WAIT_MS,
                 "max.partition.fetch.bytes": 64 * 1024}


class TopicPartition(NamedTuple):
    """One partition of a topic; a plain tuple, as kafka-python's is, so either keys a dict."""

    topic: str
    partition: int


class OffsetClient:
    """Metadata and offset lookups on one librdkafka consumer that joins no group and commits
    nothing. Not thread-safe; close it (or use it as a context manager)."""

    def __init__(self, client_config: dict) -> None:
        self.client_config = client_config
        self._consumer = Consumer({**rdkafka_config(client_config), **_LOOKUP_CONFIG})
        self._lagging_list_offsets: bool | None = None  # Tansu's ListOffsets(LATEST): asked once
        # A metadata request waits as long as the settings say a broker may take to answer at all.
        self.timeout_s = client_timeout_s(client_config)

    def __enter__(self) -> OffsetClient:
        return self

    def __exit__(self, *_) -> None:
        self.close()

    def close(self) -> None:
        self._consumer.close()

    def partitions_of(self, topics: list[str]) -> dict[str, set[int]]:
        """{topic: its partition ids}, empty for a topic that does not exist. The broker is asked
        about each topic by name (never about all of its topics: on a broker that has served many
        runs of cases, decoding such answers was most of a driver's CPU), and asking does not create
        a missing one (a consumer's `allow.auto.create.topics` is false)."""
        found = {}
        for topic in topics:
            metadata = self._metadata(topic).topics.get(topic)
            found[topic] = set(metadata.partitions) if metadata is not None else set()
        return found

    def _metadata(self, topic: str | None):
        """The broker's metadata about `topic`; KafkaUnreachable (one line naming the servers)
        when no broker answers within the timeout: a query whose brokers went away stops with it."""
        try:
            return self._consumer.list_topics(topic, timeout=self.timeout_s)
        except KafkaException as error:
            raise self._unreachable_or(error) from None

    def _unreachable_or(self, error: KafkaException) -> Exception:
        """KafkaUnreachable for an error that says no broker answered, else `error` itself."""
        if error.args and error.args[0].code() in _UNREACHABLE:
            return KafkaUnreachable(",".join(self.client_config["bootstrap_servers"]), self.timeout_s)
        return error

    def topic_partitions(self, topics: list[str]) -> list[TopicPartition]:
        """All partitions of `topics`, in topic order then partition order."""
        known = self.partitions_of(topics)
        result = []
        for topic in topics:
            if not known[topic]:
                raise ValueError(f"Kafka topic {topic!r} does not exist")
            result.extend(TopicPartition(topic, p) for p in sorted(known[topic]))
        return result

    def beginnings(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        """{tp: offset of its first record (the log end when it holds none)}."""
        return self._listed(tps, _EARLIEST)

    def ends(self, tps: list[TopicPartition], known: dict | None = None) -> dict[TopicPartition, int]:
        """{tp: offset of the next record to be written}, exact on Tansu too (see module doc).

        `known` (tp -> (listed offset, end), kept by the caller between calls and updated here)
        skips the fetch for a partition whose listed offset has not moved since: its log has not
        grown. A fetch costs a consumer's start and a round trip (~4 ms of CPU), in every trigger
        of an idle query otherwise."""
        if not tps:
            return {}
        listed = self._listed(tps, _LATEST)
        if not self._lists_behind_the_end(tps[0].topic):
            return listed
        known = {} if known is None else known
        moved = {tp: listed[tp] for tp in tps if known.get(tp, (None, None))[0] != listed[tp]}
        if moved:
            found = self._fetch_ends(moved)
            known.update({tp: (listed[tp], max(listed[tp], found[tp])) for tp in moved})
        return {tp: known[tp][1] for tp in tps}

    def _lists_behind_the_end(self, topic: str) -> bool:
        """True on Tansu, whose ListOffsets(LATEST) lags the log end (module doc)."""
        if self._lagging_list_offsets is None:
            self._lagging_list_offsets = self.is_tansu(topic)
        return self._lagging_list_offsets

    def is_tansu(self, topic: str | None = None) -> bool:
        """Whether the brokers are Tansu (by the cluster id it reports), asked with `topic`'s
        metadata (every topic's when None)."""
        return self._metadata(topic).cluster_id == TANSU_CLUSTER_ID

    def for_timestamp(self, tps: list[TopicPartition], timestamp_ms: int,
                      ends: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """{tp: earliest offset whose record timestamp >= timestamp_ms}, or its end if none."""
        from confluent_kafka.admin import AdminClient, OffsetSpec  # backfills only: not every query start

        admin = AdminClient(rdkafka_config(self.client_config))
        futures = admin.list_offsets({RdTopicPartition(tp.topic, tp.partition): OffsetSpec.for_timestamp(timestamp_ms)
                                      for tp in tps}, request_timeout=self.timeout_s)
        hints = {TopicPartition(rd.topic, rd.partition): future.result() for rd, future in futures.items()}
        starts = self.beginnings(tps)
        result = {}
        for tp in tps:
            hint = hints[tp]
            if not starts[tp] <= hint.offset < ends[tp]:
                result[tp] = ends[tp] if hint.offset < 0 else self._scan(tp, starts[tp], ends[tp], timestamp_ms)
            elif self._timestamp_at(tp, hint.offset) == hint.timestamp:
                result[tp] = hint.offset  # the broker indexes record timestamps: trust it
            else:
                result[tp] = self._scan(tp, starts[tp], ends[tp], timestamp_ms)
        return result

    def _listed(self, tps: list[TopicPartition], which: int) -> dict[TopicPartition, int]:
        """ListOffsets, asked again while a partition's leader is still taking over (a topic just
        created, a broker just restarted: the broker says so with a retriable error) and when the
        broker asked went away while others still answer (a node of a cluster stopped or crashed)."""
        if not tps:
            return {}
        deadline = time.monotonic() + STALL_TIMEOUT_S
        while True:
            try:
                answers = self._consumer.offsets_for_times(
                    [RdTopicPartition(tp.topic, tp.partition, which) for tp in tps], timeout=self.timeout_s)
            except KafkaException as error:
                if time.monotonic() > deadline or error.args[0].code() not in _BROKER_GONE:
                    raise self._unreachable_or(error) from None
                self._metadata(tps[0].topic)  # KafkaUnreachable when none answers; else ask the others
                time.sleep(0.1)
                continue
            errors = [answer.error for answer in answers if answer.error is not None]
            if not errors:
                return {TopicPartition(a.topic, a.partition): a.offset for a in answers}
            if time.monotonic() > deadline or any(e.code() not in _LEADER_MOVING for e in errors):
                raise KafkaException(errors[0])
            time.sleep(0.1)

    def _fetch_ends(self, listed: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
        """{tp: the high watermark of a fetch response from the listed offset}: every response
        carries it, one with records or without. The fetches run on a consumer of their own, new
        for the call, so any high watermark it holds came from them. (One consumer assigning and
        dropping the same partitions call after call held watermarks of earlier calls, and
        librdkafka tells of a response without records only when it reaches the end.) 0 for a
        partition whose log holds nothing at the listed offset: the listed end stands."""
        consumer = Consumer({**rdkafka_config(self.client_config), **_FETCH_CONFIG})
        consumer.assign([RdTopicPartition(tp.topic, tp.partition, offset) for tp, offset in listed.items()])
        ends: dict[TopicPartition, int] = {}
        deadline = time.monotonic() + STALL_TIMEOUT_S
        try:
            while True:
                for message in consumer.consume(num_messages=100, timeout=0.005):
                    error = message.error()
                    if error is not None and error.code() in _OUT_OF_RANGE:  # nothing at or past it
                        ends[TopicPartition(message.topic(), message.partition())] = 0
                    elif error is not None:
                        raise KafkaException(error)
                for tp in listed.keys() - ends.keys():
                    high = consumer.get_watermark_offsets(RdTopicPartition(tp.topic, tp.partition), cached=True)[1]
                    if high >= 0:
                        ends[tp] = high
                if len(ends) == len(listed):
                    return ends
                if time.monotonic() > deadline:
                    missing = sorted(listed.keys() - ends.keys())
                    raise TimeoutError(f"no fetch response for {missing} within {STALL_TIMEOUT_S:g} s")
        finally:
            consumer.close()

    def _timestamp_at(self, tp: TopicPartition, offset: int) -> int | None:
        from streamjoin.kafka.rdkafka import read_range  # the data path: not for every query start

        for messages in read_range(self.client_config, tp.topic, tp.partition, offset, offset + 1, chunk=1):
            return messages[0].timestamp()[1]
        return None

    def _scan(self, tp: TopicPartition, start: int, end: int, timestamp_ms: int) -> int:
        from streamjoin.kafka.rdkafka import read_range

        for messages in read_range(self.client_config, tp.topic, tp.partition, start, end):
            for message in messages:
                if message.timestamp()[1] >= timestamp_ms:
                    return message.offset()
        return end


# What a reader does when its next offset is not in the log any more (see `DataLoss`).
ON_DATA_LOSS = DATA_LOSS_POLICIES


@dataclass(frozen=True)
class DataLoss:
    """A partition whose committed next offset lies outside the log [begin, end): past the end
    (the topic was deleted and recreated, or the broker lost its data: an embedded broker keeps
    it in memory) or before the beginning (retention deleted records never read)."""

    tp: TopicPartition
    committed: int
    begin: int
    end: int

    def describe(self) -> str:
        where = "past the log end" if self.committed > self.end else "before the log start"
        held = (f"the log holds offsets {self.begin}..{self.end}" if self.begin < self.end
                else f"the log is empty, its next offset {self.end}")
        return (f"topic {self.tp.topic!r} partition {self.tp.partition}: the checkpoint's next offset "
                f"{self.committed} is {where} ({held})")


class DataLossError(RuntimeError):
    """Records a query has not read are gone, or its checkpoint points into a log that no longer
    exists; reading on would silently skip or re-read data."""

    def __init__(self, losses: list[DataLoss]) -> None:
        self.losses = losses
        super().__init__(
            "; ".join(loss.describe() for loss in losses)
            + ". Nothing was read. To go on anyway, re-read from the first record that exists "
              "(on_data_loss=earliest) or skip to the current end (on_data_loss=latest), or reset "
              "the query's checkpoint.")


def data_losses(committed: Mapping[TopicPartition, int], begins: Mapping[TopicPartition, int],
                ends: Mapping[TopicPartition, int]) -> list[DataLoss]:
    """The partitions whose committed next offset is outside [begin, end]."""
    return [DataLoss(tp, offset, begins[tp], ends[tp]) for tp, offset in committed.items()
            if tp in ends and not begins[tp] <= offset <= ends[tp]]


def recover(committed: Mapping[TopicPartition, int], begins: Mapping[TopicPartition, int],
            ends: Mapping[TopicPartition, int], policy: str) -> dict[TopicPartition, int]:
    """The offsets to read from: `committed`, unless a partition lost data, which raises
    DataLossError (policy "fail") or starts over at the log's beginning ("earliest") or end
    ("latest")."""
    losses = data_losses(committed, begins, ends)
    if not losses:
        return dict(committed)
    if policy not in ON_DATA_LOSS:
        raise ValueError(f"on_data_loss must be one of {ON_DATA_LOSS}, got {policy!r}")
    if policy == "fail":
        raise DataLossError(losses)
    restart = begins if policy == "earliest" else ends
    return {**committed, **{loss.tp: restart[loss.tp] for loss in losses}}
