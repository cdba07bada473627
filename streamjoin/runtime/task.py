"""One task of a compiled query: decode → pipeline → project → encode. Pure Python.

A driver (the Spark adapter, the local runner) keeps a `PipelineRuntime` per task and checkpoints
it (compiled expressions are closures, so it is cloudpickled; its stores are paged separately),
so everything here is either configuration fixed at compile time or state that must survive a
restart.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from time import perf_counter
from typing import Any, Callable, Hashable

from streamjoin.expr.compile import ROWTIME_FIELD
from streamjoin.expr.core import ExpressionError
from streamjoin.operators.base import RowKind, Side
from streamjoin.runtime.contract import (
    Emitted,
    Headers,
    InputRow,
    Output,
    Rejected,
    TaskRuntime,
    without_replay_header,
)
from streamjoin.runtime.stages import Env, Event, Pipeline, Stage
from streamjoin.serde.formats import (
    DecodeError,
    SerdeSpec,
    decode,
    encode_key,
    encode_value,
)
from streamjoin.serde.time import datetime_to_millis


# What evaluating SQL over one bad value, or encoding it, can raise: the record (or result) goes to
# the dead letters. Failures of the machinery (state store, I/O: RuntimeError, OSError) are not
# among them and still fail the batch, which Spark retries from the checkpoint.
_INSERT, _UPDATE_BEFORE, _DELETE = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.DELETE

DATA_ERRORS = (ExpressionError, ArithmeticError, LookupError, TypeError, ValueError, AttributeError, RecursionError)


def describe(error: Exception) -> str:
    """A reason for a dead letter: our own errors' messages as they are, others with their kind."""
    if type(error).__module__.startswith("streamjoin."):
        return str(error)
    return f"{type(error).__name__}: {error}"


@dataclass(frozen=True)
class Entry:
    """Where records of one input topic enter the pipeline, under which alias. A topic read
    twice (a self-join) has two entries."""

    alias: str
    stage: Stage | None  # None: straight to the sink (no join, e.g. PARTITION BY)
    port: Side
    is_table: bool
    # Every task reads the whole topic (all partitions) for this entry: the referenced table of a
    # foreign-key join, whose rows are partitioned by a key the other side is not partitioned by.
    broadcast: bool = False
    watermark_delay: int = 0  # the source's watermark trails its largest event time by this (ms)


@dataclass(frozen=True)
class SinkBinding:
    """How result events become records of the output topic. `key` computes the output key
    from an event's env (None: keep the event's key, e.g. a join result keyed by its join key);
    `value` its output value columns (name -> value, in order)."""

    topic: str
    serde: SerdeSpec
    value: Callable[[Env], dict[str, Any]]
    key: Callable[[Env], tuple] | None = None
    emit_retractions: bool = False  # Flink changelog sinks; an upsert topic only wants new values
    timestamp_column: str | None = None  # ksqlDB WITH (TIMESTAMP=...): this column's value is the record ts


class PipelineRuntime(TaskRuntime):
    def __init__(self, inputs: dict[str, tuple[SerdeSpec, tuple[Entry, ...]]], pipeline: Pipeline,
                 sink: SinkBinding, task: int = 0) -> None:
        super().__init__()
        self.task = task
        self.inputs = inputs
        self.input_topics = frozenset(inputs)
        self.pipeline = pipeline
        self.sink = sink
        self.uses_watermarks = pipeline.uses_watermarks
        self.watermarks: dict[tuple[str, str], int] = {}  # (topic, alias) -> its watermark

    def process(self, row: InputRow) -> list[Output]:
        serde, entries = self.inputs[row.topic]
        # A broadcast topic's row reaches every task; the task of its partition counts it.
        owned = row.partition == self.task
        seconds = self.seconds
        started = perf_counter()
        try:
            record = decode(serde, row.key, row.value, row.ts, row.headers)
        except DecodeError as error:
            # Only the owning task sends a broadcast row to the dead letters.
            return [Rejected(f"{_where(row)}: {error}")] if owned else []
        finally:
            # One clock reading ends a step and starts the next (building the event counts as operators).
            clock = perf_counter()
            seconds["decode"] += clock - started
        self.metrics["input_records"] += owned
        ts = record.ts
        if self.stream_time is None or ts > self.stream_time:
            self.stream_time = ts
        out: list[Output] = []
        headers = without_replay_header(row.headers) if row.headers else ()
        for entry in entries:
            if not owned and not entry.broadcast:
                continue  # another task's row of a topic also read whole (an FK join of a table to itself)
            event = self._event(serde, entry, record, row)
            stage = entry.stage
            try:
                reached = [event] if stage is None else self.pipeline.push(stage, event, entry.port)
                if self.uses_watermarks and stage is not None:
                    reached += self._watermark(row.topic, entry, ts)
            except DATA_ERRORS as error:
                self.metrics["evaluation_errors"] += 1
                out.append(Rejected(f"{_where(row)}: evaluation failed: {describe(error)}"))
                continue
            finally:
                pushed = perf_counter()
                seconds["operators"] += pushed - clock
                clock = pushed
            self._emit(reached, headers, out)
            clock = perf_counter()
            seconds["encode"] += clock - pushed
        return out

    def _watermark(self, topic: str, entry: Entry, ts: int) -> list[Event]:
        """The entry's watermark after a record at `ts`, passed down the pipeline if it moved."""
        watermark = ts - entry.watermark_delay
        if watermark <= self.watermarks.get((topic, entry.alias), watermark - 1):
            return []
        self.watermarks[(topic, entry.alias)] = watermark
        return self.pipeline.advance(entry.stage, watermark, entry.port)

    def end_of_input(self) -> list[Output]:
        try:
            events = self.pipeline.end()
        except DATA_ERRORS as error:
            self.metrics["evaluation_errors"] += 1
            return [Rejected(f"end of input: evaluation failed: {describe(error)}")]
        return self._emit(events, (), [])

    def counters(self) -> Counter:
        total = super().counters()
        for stage in self.pipeline.stages:
            processor = getattr(stage, "processor", None)
            if processor is not None:
                total.update(processor.metrics.counts)
            total.update(getattr(stage, "metrics", {}))  # a window stage's own counts
        return total

    @staticmethod
    def _event(serde: SerdeSpec, entry: Entry, record, read: InputRow) -> Event:
        key: Hashable | None = record.key
        value, ts = record.value, record.ts
        if value is None:
            return Event(_DELETE if entry.is_table else _INSERT, key, None, ts)
        names = serde.key_names  # a windowed key's bounds follow its columns (see below)
        row = ({names[0]: key[0]} if len(names) == 1 else dict(zip(names, key))) if key else {}
        row.update(value)
        # the pseudo-columns (streamjoin.expr.compile.RECORD_FIELDS): event time, where it was read
        row[ROWTIME_FIELD] = ts
        row["ROWPARTITION"] = read.partition
        row["ROWOFFSET"] = read.offset
        if serde.window is not None and key is not None:  # a windowed key ends with its bounds
            row["WINDOWSTART"], row["WINDOWEND"] = key[-2:]
        return Event._make((_INSERT, key, {entry.alias: row}, ts))

    def _emit(self, events: list[Event], headers: Headers, out: list[Output]) -> list[Output]:
        """Each result encoded on its own: one that cannot be projected or encoded becomes a
        dead letter and the others still go out; appended to `out`. Each carries `headers`, those
        of the record whose processing emitted it (Kafka Streams forwards them; none at the end
        of input)."""
        for event in events:
            if event.kind is _UPDATE_BEFORE and not self.sink.emit_retractions:
                continue
            try:
                encoded = self._encode(event, headers)
                out.append(encoded)
                self.metrics["output_records"] += isinstance(encoded, Emitted)
            except DATA_ERRORS as error:
                self.metrics["encode_errors"] += 1
                out.append(Rejected(f"output to {self.sink.topic}: {describe(error)}"))
        return out

    def _encode(self, event: Event, headers: Headers) -> Output:
        sink = self.sink
        kind, key, env, ts = event
        if sink.key and env is not None:
            key = sink.key(env)
        if env is None or (kind is _DELETE and not sink.emit_retractions):
            key_bytes = encode_key(sink.serde, key)
            if key_bytes is None:  # a record with neither key nor value deletes nothing
                self.metrics["unkeyed_retractions"] += 1
                return Rejected(f"output to {sink.topic}: a deletion of a result row without a key cannot be "
                                "written to an upsert topic (the result has no upsert key)")
            return Emitted(sink.topic, key_bytes, None, ts, headers)
        value = sink.value(env)
        if sink.timestamp_column is not None:
            ts = _millis(value[sink.timestamp_column])
        return Emitted._make((sink.topic, encode_key(sink.serde, key), encode_value(sink.serde, value), ts, headers))


def _where(row: InputRow) -> str:
    """The record a dead letter is about."""
    return f"{row.topic}[{row.partition}]@{row.offset}"


def _millis(value: Any) -> int:
    if value is None:
        raise ValueError("the TIMESTAMP column of the result is NULL")
    return datetime_to_millis(value) if isinstance(value, datetime) else int(value)
