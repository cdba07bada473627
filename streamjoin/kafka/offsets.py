"""Consumer-level offset work shared by the admin helpers and the Spark source: log end offsets
that are correct on Tansu, timestamp -> offset lookup that is correct on Tansu, and reading an
exact offset range of one partition.

Tansu quirks handled here (harmless on real Kafka):
- ListOffsets(LATEST) answers the base offset of the last record batch, not the log end. We seek
  there and fetch once: the Fetch response carries the true high watermark.
- ListOffsets(timestamp) answers by append time, ignoring record timestamps. We check the answer
  against the record it points to and otherwise scan for the first record at or after the time.

kafka-python is imported by the functions that make its objects, not here: the Spark source's
read tasks import this module (for the data-loss policy, `recover`) and never look an offset up.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Mapping

if TYPE_CHECKING:
    from kafka import KafkaConsumer, TopicPartition

STALL_TIMEOUT_S = 30.0  # no progress for this long while reading a range that must exist -> error
_POLL_MS = 200
# A poll waits out its whole timeout for a high watermark that is already on its way (seen: every
# 200 ms poll took 200 ms); short polls return it in ~25-40 ms, and every micro-batch waits for it.
_HIGHWATER_POLL_MS = 10


# Offsets we seek to are never silently replaced: reading a range whose records were deleted
# (retention) raises OffsetOutOfRangeError, like Spark's Kafka source with failOnDataLoss=true.
_NO_RESET = {"enable_auto_commit": False, "group_id": None, "auto_offset_reset": "none"}


def offset_consumer(client_config: dict) -> KafkaConsumer:
    """A consumer for metadata and offset lookups: no group, small fetches."""
    from kafka import KafkaConsumer  # kafka-python: see the module doc

    # fetch_max_wait_ms: a fetch at the log end must answer at once (it carries the high watermark).
    return KafkaConsumer(**client_config, **_NO_RESET,
                         max_partition_fetch_bytes=1024, fetch_max_bytes=64 * 1024,
                         fetch_max_wait_ms=10)


def data_consumer(client_config: dict) -> KafkaConsumer:
    """A consumer for bulk reads: no group, large fetches."""
    from kafka import KafkaConsumer  # kafka-python: see the module doc
    from kafka.record import util as record_util

    # kafka-python checks each batch's CRC32C in pure Python unless the `crc32c` C extension is
    # installed; that check alone took a third of the read time. Without the extension we rely on
    # TCP checksums in transit (the broker validated the CRC when the batch was produced).
    check_crcs = record_util.crc32c_c is not None
    return KafkaConsumer(**client_config, **_NO_RESET, max_poll_records=20_000,
                         fetch_max_bytes=64 * 1024 * 1024, max_partition_fetch_bytes=16 * 1024 * 1024,
                         receive_buffer_bytes=4 << 20, check_crcs=check_crcs)


def topic_partitions(consumer: KafkaConsumer, topics: list[str]) -> list[TopicPartition]:
    """All partitions of `topics`, in topic order then partition order."""
    from kafka import TopicPartition  # kafka-python: see the module doc

    result = []
    known = partitions_of(consumer, topics)
    for topic in topics:
        partitions = known[topic]
        if not partitions:
            raise ValueError(f"Kafka topic {topic!r} does not exist")
        result.extend(TopicPartition(topic, p) for p in sorted(partitions))
    return result


def partitions_of(consumer: KafkaConsumer, topics: list[str]) -> dict[str, set[int]]:
    """{topic: its partition ids}, empty for a topic that does not exist; the broker is asked
    about these topics alone.

    Why: kafka-python's `partitions_for_topic` asks for the metadata of every topic in the cluster
    whenever one is not in its cache. Decoding such answers grows with the cluster: on a broker
    with ~1,500 topics (one that has served many runs of cases) they were most of the
    driver's CPU in a run of cases (with the answer each client's start gets, which this does not
    avoid: Tansu quirks in docs/operations.md). The topics found are added to those the consumer
    tracks, so its periodic refresh asks for them and no others (Tansu answers a request for no
    topics with all of them); a missing one is not tracked, or the refresh would retry it."""
    from kafka.errors import UnknownTopicOrPartitionError

    cluster = consumer._cluster  # kafka-python 3.0 (pinned) has no public call for this
    missing = {topic for topic in topics if cluster.partitions_for_topic(topic) is None}
    if missing:
        # Asking about a missing topic by name must not create it (Tansu and Kafka would, by
        # default); kafka-python 3.0 does not pass the consumer's own setting on to its metadata.
        cluster.config["allow_auto_create_topics"] = False
        if cluster.metadata_refresh_in_progress:  # an answer already on its way lacks `missing`
            consumer._net.run(consumer._manager.wait_for, cluster.request_update(), None)
        # The answer replaces what the consumer knew: it must name every topic asked about here.
        cluster.set_topics(cluster._topics | set(topics))
        try:
            consumer._net.run(consumer._manager.wait_for, cluster.request_update(), None)
        except UnknownTopicOrPartitionError:
            pass  # the only topic asked for is missing: the answer was applied all the same
        cluster._topics -= {topic for topic in missing if cluster.partitions_for_topic(topic) is None}
    return {topic: set(cluster.partitions_for_topic(topic) or ()) for topic in topics}


def beginning_offsets(consumer: KafkaConsumer, tps: list[TopicPartition]) -> dict:
    return dict(consumer.beginning_offsets(tps)) if tps else {}


def log_end_offsets(consumer: KafkaConsumer, tps: list[TopicPartition], known: dict | None = None) -> dict:
    """{tp: offset of the next record to be written}, exact on Tansu too (see module doc).

    `known` (tp -> (listed offset, end), kept by the caller between calls and updated here) skips
    the fetch for a partition whose listed offset has not moved since: its log has not grown. The
    fetch decodes the whole batch at the listed offset in Python, thousands of records for a
    bulk-loaded topic: 0.3 s in every trigger of an idle query over such a table."""
    if not tps:
        return {}
    listed = consumer.end_offsets(tps)
    known = {} if known is None else known
    moved = [tp for tp in tps if known.get(tp, (None, None))[0] != listed[tp]]
    if moved:
        consumer.assign(moved)
        for tp in moved:
            consumer.seek(tp, listed[tp])
            # Forget the high watermark of an earlier call so we wait for a fresh fetch response
            # (kafka-python has no public API for this).
            consumer._subscription.assignment[tp].highwater = None
        deadline = time.monotonic() + STALL_TIMEOUT_S
        while any(consumer.highwater(tp) is None for tp in moved):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no fetch response for {moved} within {STALL_TIMEOUT_S}s")
            consumer.poll(timeout_ms=_HIGHWATER_POLL_MS)
        known.update({tp: (listed[tp], max(listed[tp], consumer.highwater(tp))) for tp in moved})
    return {tp: known[tp][1] for tp in tps}


def offsets_for_timestamp(consumer: KafkaConsumer, tps: list[TopicPartition], timestamp_ms: int,
                          ends: dict) -> dict:
    """{tp: earliest offset whose record timestamp >= timestamp_ms}, or the end offset if none."""
    hints = consumer.offsets_for_times({tp: timestamp_ms for tp in tps})
    starts = beginning_offsets(consumer, tps)
    result = {}
    for tp in tps:
        hint = hints.get(tp)
        if hint is None:
            result[tp] = ends[tp]
        elif _record_timestamp(consumer, tp, hint.offset, ends[tp]) == hint.timestamp:
            result[tp] = hint.offset  # the broker indexes record timestamps: trust it
        else:
            result[tp] = _scan_for_timestamp(consumer, tp, starts[tp], ends[tp], timestamp_ms)
    return result


def _record_timestamp(consumer: KafkaConsumer, tp: TopicPartition, offset: int, end: int):
    for record in read_range(consumer, tp, offset, min(offset + 1, end)):
        return record.timestamp
    return None


def _scan_for_timestamp(consumer, tp, start: int, end: int, timestamp_ms: int) -> int:
    for record in read_range(consumer, tp, start, end):
        if record.timestamp >= timestamp_ms:
            return record.offset
    return end


def read_range(consumer: KafkaConsumer, tp: TopicPartition, start: int, end: int) -> Iterator:
    """kafka-python ConsumerRecords of `tp` with start <= offset < end, in offset order. Offsets
    may have gaps (transaction markers, compaction); the range ends when the position reaches
    `end`. Raises TimeoutError if the broker stops delivering before that."""
    if start >= end:
        return
    consumer.assign([tp])
    consumer.seek(tp, start)
    last_progress = time.monotonic()
    while True:
        batch = consumer.poll(timeout_ms=_POLL_MS).get(tp, ())
        for record in batch:
            if record.offset >= end:
                return
            yield record
        if consumer.position(tp) >= end:
            return
        if batch:
            last_progress = time.monotonic()
        elif time.monotonic() - last_progress > STALL_TIMEOUT_S:
            raise TimeoutError(f"{tp}: stuck at offset {consumer.position(tp)} before end {end}")


# What a reader does when its next offset is not in the log any more (see `DataLoss`).
ON_DATA_LOSS = ("fail", "earliest", "latest")


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
        return (f"topic {self.tp.topic!r} partition {self.tp.partition}: the checkpoint's next offset "
                f"{self.committed} is {where} (the log holds offsets {self.begin}..{self.end})")


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
