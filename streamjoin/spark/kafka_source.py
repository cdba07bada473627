"""Spark's Kafka source rebuilt as a PySpark Python data source (Spark's JVM connector needs Maven,
unreachable here). Same option names and row schema as `format("kafka")`, so that format is a
drop-in where its jar exists. The driver side looks offsets up (`kafka.offsets.OffsetClient`)
and read tasks read records (`kafka.rdkafka.read_range`), both with librdkafka: neither imports
kafka-python, which cost each Python worker ~0.85 s.

Offsets (in Spark checkpoints) are Spark Kafka's JSON: {"topic": {"0": 42, "1": 7}}, the next
offset to read per partition. Each micro-batch reads [start, end) of every partition as one input
partition, in topic then partition order: for a single topic, Spark partition i = Kafka partition i.

Options: kafka.bootstrap.servers, kafka.security.protocol, kafka.sasl.* (see kafka/client.py),
subscribe (comma list), startingOffsets (earliest|latest|JSON with -2 = earliest, -1 = latest),
startingTimestamp (ms), endingOffsets (batch: latest|JSON), endingTimestamp (batch, ms),
maxOffsetsPerTrigger (streaming), streamjoin.onDataLoss (streaming: fail|earliest|latest, what to
do when a checkpointed offset is outside the log; Spark's failOnDataLoss=false means earliest),
streamjoin.packed (true: a row per chunk of up to ARROW_BATCH_ROWS records, `packing.PACKED_INPUT_DDL`,
what streamjoin's own queries read; the default is Spark's row per record).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Iterator, Mapping

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from streamjoin.kafka import offsets
from streamjoin.kafka.client import client_config_from_options
from streamjoin.kafka.offsets import TopicPartition
from streamjoin.spark import packing
from streamjoin.spark.collector import cycle_collection_paused

SCHEMA_DDL = ("key binary, value binary, topic string, partition int, offset long, "
              "timestamp timestamp, timestampType int, "
              "headers array<struct<key: string, value: binary>>")
ARROW_SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
    ("partition", pa.int32()), ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
    ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
])
ARROW_BATCH_ROWS = 50_000
EARLIEST, LATEST = -2, -1  # Spark's sentinels in offset JSON


@dataclass(frozen=True)
class SourceOptions:
    client_config: dict
    topics: tuple[str, ...]
    starting_offsets: str
    starting_timestamp: int | None
    ending_offsets: str
    ending_timestamp: int | None
    max_offsets_per_trigger: int | None
    end_of_input: bool = False
    on_data_loss: str = "fail"
    packed: bool = False  # streamjoin.packed: rows of packed records (`packing.PACKED_INPUT_DDL`)

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> "SourceOptions":
        # Spark hands a case-insensitive dict with lower-cased keys: always use .get().
        topics = tuple(t.strip() for t in (options.get("subscribe") or "").split(",") if t.strip())
        if not topics:
            raise ValueError("option 'subscribe' (comma-separated topics) is required")

        def optional_int(name: str) -> int | None:
            raw = options.get(name)
            try:
                return None if raw in (None, "") else int(raw)
            except ValueError:
                raise ValueError(f"option {name!r} must be an integer, got {raw!r}") from None

        return cls(client_config=client_config_from_options(options), topics=topics,
                   starting_offsets=options.get("startingOffsets") or "earliest",
                   starting_timestamp=optional_int("startingTimestamp"),
                   ending_offsets=options.get("endingOffsets") or "latest",
                   ending_timestamp=optional_int("endingTimestamp"),
                   max_offsets_per_trigger=optional_int("maxOffsetsPerTrigger"),
                   end_of_input=(options.get("streamjoin.endOfInput") or "").lower() == "true",
                   on_data_loss=_on_data_loss(options),
                   packed=cls.packed_from(options))

    @staticmethod
    def packed_from(options: Mapping[str, str]) -> bool:
        return (options.get("streamjoin.packed") or "").lower() == "true"


def _on_data_loss(options: Mapping[str, str]) -> str:
    policy = (options.get("streamjoin.onDataLoss") or "").lower()
    if not policy:
        return "earliest" if (options.get("failOnDataLoss") or "true").lower() == "false" else "fail"
    if policy not in offsets.ON_DATA_LOSS:
        raise ValueError(f"option 'streamjoin.onDataLoss' must be one of {offsets.ON_DATA_LOSS}, got {policy!r}")
    return policy


@dataclass(frozen=True)
class KafkaRange(InputPartition):
    """One Kafka partition's offsets [start, end) in one micro-batch or batch read."""

    topic: str
    partition: int
    start: int
    end: int
    end_marker: bool = False  # bounded input: append the partition's end-of-input marker row


def to_json_offsets(by_tp: Mapping[TopicPartition, int]) -> dict:
    result: dict = {}
    for tp, offset in by_tp.items():
        result.setdefault(tp.topic, {})[str(tp.partition)] = int(offset)
    return result


def from_json_offsets(by_topic: Mapping) -> dict[TopicPartition, int]:
    return {TopicPartition(topic, int(p)): int(offset)
            for topic, partitions in by_topic.items() for p, offset in partitions.items()}


class _OffsetResolver:
    """Driver-side offset lookups; opens its Kafka client lazily and never pickles it (Spark
    ships readers to executors by pickling them)."""

    def __init__(self, options: Mapping[str, str]):
        self.opts = SourceOptions.parse(options)
        self._client: offsets.OffsetClient | None = None
        self.known_ends: dict = {}  # `OffsetClient.ends`: partitions whose log has not grown

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_client": None, "known_ends": {}}

    @property
    def client(self) -> offsets.OffsetClient:
        if self._client is None:
            self._client = offsets.OffsetClient(self.opts.client_config)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def partitions_now(self) -> list[TopicPartition]:
        return self.client.topic_partitions(list(self.opts.topics))

    def resolve(self, spec: str, timestamp_ms: int | None, tps: list[TopicPartition],
                name: str) -> dict[TopicPartition, int]:
        """Offsets for earliest|latest|JSON or a timestamp (which takes precedence). Partitions
        a JSON spec leaves out start at earliest and end at latest."""
        ends = self.client.ends(tps)
        if timestamp_ms is not None:
            return self.client.for_timestamp(tps, timestamp_ms, ends)
        starts = self.client.beginnings(tps)
        if spec.strip().lower() == "earliest":
            return starts
        if spec.strip().lower() == "latest":
            return ends
        try:
            given = from_json_offsets(json.loads(spec))
        except (ValueError, AttributeError, TypeError):
            raise ValueError(f"option {name!r} must be earliest, latest or JSON like "
                             f'{{"topic": {{"0": 23}}}}, got {spec!r}') from None
        unknown = set(given) - set(tps)
        if unknown:
            raise ValueError(f"option {name!r} names unknown partitions {sorted(unknown)}")
        missing = ends if name == "endingOffsets" else starts
        resolved = {}
        for tp in tps:
            offset = given.get(tp, missing[tp])
            resolved[tp] = {EARLIEST: starts[tp], LATEST: ends[tp]}.get(offset, offset)
        return resolved


def ranges(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int]) -> list:
    """Input partitions for every partition in `end`, in topic then partition order."""
    result = []
    for tp in end:
        first = start[tp]
        if first > end[tp]:
            raise ValueError(f"{tp}: start offset {first} is after end offset {end[tp]} "
                             "(topic deleted and recreated?)")
        result.append(KafkaRange(tp.topic, tp.partition, first, end[tp]))
    return result


def read_range_as_arrow(client_config: dict, part: KafkaRange, packed: bool = False) -> Iterator[pa.RecordBatch]:
    """Rows of one KafkaRange as Arrow record batches in offset order (read with librdkafka):
    Spark's Kafka rows, or with `packed` one row per chunk of records (`packing.pack_records`).
    The data path is imported here, in the read tasks: the driver's planning process of every
    query start unpickles this module too, and never reads a record."""
    from streamjoin.kafka import rdkafka

    with cycle_collection_paused():  # a chunk is 50,000 messages and their fields: more than half the CPU otherwise
        for messages in rdkafka.read_range(client_config, part.topic, part.partition, part.start, part.end,
                                           chunk=ARROW_BATCH_ROWS):
            times = [m.timestamp() for m in messages]
            records = packing.record_batch([m.offset() for m in messages], [t[1] for t in times],
                                           [m.key() for m in messages], [m.value() for m in messages],
                                           [m.headers() for m in messages])
            if packed:
                yield packing.pack_records(part.topic, part.partition, records)
            else:  # librdkafka: 1 create time, 2 log-append time; Spark's schema: 0 and 1
                yield _spark_rows(part, records, [max(t[0] - 1, 0) for t in times])


def end_marker_batch(part: KafkaRange, packed: bool = False) -> pa.RecordBatch:
    """The end-of-input marker of one partition: offset -1, no key, no value."""
    records = packing.record_batch([-1], [0], [None], [None], [None])
    return packing.pack_records(part.topic, part.partition, records) if packed else _spark_rows(part, records, [0])


_HEADER = ARROW_SCHEMA.field("headers").type


def _spark_rows(part: KafkaRange, records: pa.RecordBatch, timestamp_types: list) -> pa.RecordBatch:
    """Spark's Kafka rows of `records`, built column by column (the per-row work stays in C):
    a record without headers has an empty array, as in Spark's own source."""
    import pyarrow.compute as pc  # a read task's import, as the data path's above

    rows = records.num_rows
    headers = records.column("headers")
    if headers.null_count < rows:
        header_column = pa.array([h or [] for h in headers.to_pylist()], _HEADER)
    else:  # the usual case: no headers at all, so an array of empty lists without a Python loop
        header_column = pa.ListArray.from_arrays(pa.array([0] * (rows + 1), pa.int32()),
                                                 pa.array([], _HEADER.value_type))
    columns = {
        "key": records.column("key"), "value": records.column("value"),
        "topic": pa.array([part.topic] * rows, pa.string()), "partition": pa.array([part.partition] * rows, pa.int32()),
        "offset": records.column("offset"),
        "timestamp": pc.multiply(records.column("ts"), 1000).cast(ARROW_SCHEMA.field("timestamp").type),
        "timestampType": pa.array(timestamp_types, pa.int32()), "headers": header_column,
    }
    return pa.RecordBatch.from_arrays([columns[f.name] for f in ARROW_SCHEMA], schema=ARROW_SCHEMA)


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reader. availableNow: the end offsets at query start are the target; later
    records wait for the next run. New partitions of a subscribed topic start at earliest."""

    def __init__(self, options: Mapping[str, str]):
        self._resolver = _OffsetResolver(options)
        self._target: dict[TopicPartition, int] | None = None

    def initialOffset(self) -> dict:
        resolver = self._resolver
        tps = resolver.partitions_now()
        return to_json_offsets(resolver.resolve(resolver.opts.starting_offsets,
                                                resolver.opts.starting_timestamp, tps,
                                                "startingOffsets"))

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self._resolver.partitions_now()
        self._target = self._resolver.client.ends(tps)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self._resolver.opts.max_offsets_per_trigger
        return ReadMaxRows(limit) if limit else ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        if self._target is not None:
            ends = dict(self._target)
        else:
            ends = self._resolver.client.ends(self._resolver.partitions_now(), self._resolver.known_ends)
        begun = self._readable(from_json_offsets(start), ends)
        if isinstance(limit, ReadMaxRows):
            ends = cap_total(begun, ends, limit.max_rows)
        return to_json_offsets(ends)  # never behind `begun`: a lost start was recovered or raised

    def partitions(self, start: dict, end: dict) -> list:
        until = from_json_offsets(end)
        planned = ranges(self._readable(from_json_offsets(start), until), until)
        if not any(r.start < r.end for r in planned):
            return []
        if self._resolver.opts.end_of_input and self._target is not None and until == self._target:
            # streamjoin.endOfInput: this availableNow run's input ends here; every partition
            # (even one without new records) says so, so every task can close its windows.
            return [replace(r, end_marker=True) for r in planned]
        # A Spark task per partition with nothing new would only cost a Python worker round trip
        # (most of a few-record batch's partitions have nothing new).
        return [r for r in planned if r.start < r.end]

    def _readable(self, start: dict, end: dict) -> dict:
        """Where to read from: `start`, plus the beginning offset of partitions that appeared
        since (Spark's Kafka source reads a new partition from earliest), with the data-loss
        policy applied to a start outside the log (never a silent empty read past the end)."""
        begins = self._resolver.client.beginnings(list(end))
        with_new = {**{tp: begins[tp] for tp in end if tp not in start}, **start}
        return offsets.recover(with_new, begins, end, self._resolver.opts.on_data_loss)

    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        opts = self._resolver.opts
        yield from read_range_as_arrow(opts.client_config, partition, opts.packed)
        if partition.end_marker:
            yield end_marker_batch(partition, opts.packed)

    def commit(self, end: dict) -> None:
        """Offsets live in Spark's checkpoint; nothing to commit to Kafka."""

    def stop(self) -> None:
        self._resolver.close()


def cap_total(start: Mapping[TopicPartition, int], end: Mapping[TopicPartition, int],
              max_rows: int) -> dict[TopicPartition, int]:
    """End offsets advancing at most `max_rows` in total, split in proportion to each partition's
    backlog (as Spark's maxOffsetsPerTrigger); always at least one record when any is waiting."""
    backlog = {tp: max(end[tp] - start[tp], 0) for tp in end}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(end)
    share = {tp: backlog[tp] * max_rows // total for tp in end}
    if not any(share.values()):
        share[max(backlog, key=backlog.get)] = 1
    return {tp: start[tp] + share[tp] for tp in end}


class KafkaBatchReader(DataSourceReader):
    """Batch read of [startingOffsets|startingTimestamp, endingOffsets|endingTimestamp)."""

    def __init__(self, options: Mapping[str, str]):
        self._resolver = _OffsetResolver(options)

    def partitions(self) -> list:
        resolver, opts = self._resolver, self._resolver.opts
        try:
            tps = resolver.partitions_now()
            start = resolver.resolve(opts.starting_offsets, opts.starting_timestamp, tps,
                                     "startingOffsets")
            end = resolver.resolve(opts.ending_offsets, opts.ending_timestamp, tps,
                                   "endingOffsets")
        finally:
            resolver.close()
        return ranges(start, {tp: max(end[tp], start[tp]) for tp in tps})

    def read(self, partition: KafkaRange) -> Iterator[pa.RecordBatch]:
        opts = self._resolver.opts
        return read_range_as_arrow(opts.client_config, partition, opts.packed)
