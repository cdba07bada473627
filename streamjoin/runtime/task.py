"""One task of a compiled query: decode → pipeline → project → encode. Pure Python.

A driver (the Spark adapter, the local runner) keeps a `PipelineRuntime` per task and checkpoints
it (compiled expressions are closures, so it is cloudpickled; its stores are paged separately),
so everything here is either configuration fixed at compile time or state that must survive a
restart.
"""

from __future__ import annotations

from collections import Counter
from functools import cached_property
from itertools import groupby, islice
from operator import itemgetter
from time import perf_counter
from typing import Hashable, Iterable, Iterator, Sequence

from streamjoin.operators.base import RowKind
from streamjoin.runtime.contract import (
    Emitted,
    Headers,
    InputRow,
    Output,
    Rejected,
    RunOutputs,
    TaskRuntime,
    without_replay_header,
)
from streamjoin.runtime.bindings import Entry, SinkBinding
from streamjoin.runtime.encoding import record_millis
from streamjoin.runtime.lookup import StreamTableLookup
from streamjoin.runtime.run_sink import RunPath
from streamjoin.runtime.upserts import TableTableUpserts
from streamjoin.runtime.within import StreamStreamInterval, StreamStreamWithin
from streamjoin.runtime.records import DATA_ERRORS, describe, input_row, where
from streamjoin.runtime.stages import Event, Pipeline
from streamjoin.serde.batches import decode_all
from streamjoin.serde.formats import (
    DecodedRecord,
    DecodeError,
    SerdeSpec,
    decode,
    encode_key,
    encode_value,
)


_INSERT, _UPDATE_BEFORE, _DELETE = RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.DELETE
# Records per run given to a fast path at once: long enough to spread its per-run work, short
# enough that a run's objects stay in the CPU caches between its passes (decode, join, encode).
RUN_LENGTH = 1024


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
        path = self.fast_paths.get(row.topic)
        if path is None:
            return self.process_record(row)
        return path.process_run((row,), self._decoded([row]))[0]

    def process_runs(self, rows: list[InputRow]) -> Iterator[tuple[Sequence[InputRow], RunOutputs]]:
        """The rows in order, RUN_LENGTH at a time: consecutive records of the topics of one fast
        path (`fast_paths`) as runs of that path, a column at a time where it can
        (`process_columns`), else decoded together (`decode_all`); the other records decoded
        together, then through the pipeline one by one."""
        paths = self.fast_paths
        for path, pairs in groupby(zip(map(paths.get, map(itemgetter(0), rows)), rows), key=itemgetter(0)):
            segment: dict = {}  # what the path keeps for its consecutive runs (`process_columns`)
            for run in batched(map(itemgetter(1), pairs), RUN_LENGTH):
                if path is not None:
                    outputs = path.process_columns(run, segment)
                    if outputs is not None:
                        yield run, outputs
                        continue
                    yield run, path.process_run(run, self._decoded(run))
                    continue
                # a row that does not decode: the record path writes its dead letter
                yield run, [self.process_record(row) if record is None else
                            self._process_decoded(row, *self.inputs[row.topic], record)
                            for row, record in zip(run, self._decoded(run))]

    def _decoded(self, rows: list[InputRow]) -> list[DecodedRecord | None]:
        """`decode_all` of each topic's rows among `rows`, in the order of `rows`."""
        started = perf_counter()
        positions: dict[str, list[int]] = {}
        for position, row in enumerate(rows):
            positions.setdefault(row[0], []).append(position)
        records: list[DecodedRecord | None] = [None] * len(rows)
        for topic, indexes in positions.items():
            for position, record in zip(indexes, decode_all(self.inputs[topic][0], [rows[i] for i in indexes])):
                records[position] = record
        self.seconds["decode"] += perf_counter() - started
        return records

    @cached_property
    def fast_paths(self) -> dict[str, RunPath]:
        """The input topics whose records take a fast path: the stream side of a stream-table
        join (`lookup`), both sides of a windowed stream-stream join or of Flink's interval join
        (`within`) or of a primary-key table-table join (`upserts`; one path for the two topics).
        Derived from the pipeline, so never checkpointed."""
        paths: dict[str, RunPath] = {}
        for topic in self.inputs:
            if topic not in paths:
                path = (StreamTableLookup.of(self, topic) or StreamStreamWithin.of(self, topic)
                        or StreamStreamInterval.of(self, topic) or TableTableUpserts.of(self, topic))
                paths.update(dict.fromkeys(path.topics, path) if path is not None else {})
        return paths

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("fast_paths", None)
        return state

    def process_record(self, row: InputRow) -> list[Output]:
        """The reference path: the record through every stage of the pipeline."""
        serde, entries = self.inputs[row.topic]
        # A broadcast topic's row reaches every task; the task of its partition counts it.
        owned = row.partition == self.task
        seconds = self.seconds
        started = perf_counter()
        try:
            record = decode(serde, row.key, row.value, row.ts, row.headers)
        except DecodeError as error:
            # Only the owning task counts a broadcast row as input and sends it to the dead letters.
            self.metrics["input_records"] += owned
            return [Rejected(f"{where(row)}: {error}")] if owned else []
        finally:
            seconds["decode"] += perf_counter() - started
        return self._process_decoded(row, serde, entries, record)

    def _process_decoded(self, row: InputRow, serde: SerdeSpec, entries: tuple[Entry, ...],
                         record: DecodedRecord) -> list[Output]:
        owned = row.partition == self.task
        seconds = self.seconds
        # One clock reading ends a step and starts the next (building the event counts as operators).
        clock = perf_counter()
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
                out.append(Rejected(f"{where(row)}: evaluation failed: {describe(error)}"))
                continue
            finally:
                pushed = perf_counter()
                seconds["operators"] += pushed - clock
                clock = pushed
            self.emit(reached, headers, out)
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
        return self.emit(events, (), [])

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
        if record.value is None:
            return Event(_DELETE if entry.is_table else _INSERT, key, None, record.ts)
        return Event._make((_INSERT, key, {entry.alias: input_row(serde, record, read)}, record.ts))

    def emit(self, events: list[Event], headers: Headers, out: list[Output]) -> list[Output]:
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
            ts = record_millis(value[sink.timestamp_column])
        return Emitted._make((sink.topic, encode_key(sink.serde, key), encode_value(sink.serde, value), ts, headers))


def batched(rows: Iterable[InputRow], size: int) -> Iterator[list[InputRow]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk
