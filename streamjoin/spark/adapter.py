"""Runs a compiled sub-topology inside Spark: one stateful group per task.

A task is one Kafka partition number of the (co-partitioned) input topics, as in Kafka Streams.
`applyInPandasWithState` hands each task its micro-batch rows; the task's `TaskRuntime` (pure
Python: decode, join operators, project, encode) is kept pickled in the group state, so a
restart from the checkpoint resumes exactly where the last committed batch left it.

Within a batch the rows are replayed in Kafka Streams order: per input partition in offset order,
always taking the head record with the smallest timestamp (`merge_in_timestamp_order`).

Rows with a negative offset are end-of-input markers from a bounded source (one per input
partition): once a task has one for every input topic, it advances time to the end, which closes
every window (a bounded Flink source's final watermark).
"""

from __future__ import annotations

import json
from pyspark import cloudpickle
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator

import pandas as pd

from streamjoin.operators.ordering import merge_in_timestamp_order

# What a task emits: sink records, dead letters and metric deltas, told apart by `channel`.
OUTPUT_SCHEMA = (
    "channel string, topic string, key binary, value binary, ts long, "
    "src_topic string, src_partition int, src_offset long, reason string"
)
STATE_SCHEMA = "runtime binary"
SINK, DEAD_LETTER, METRICS = "sink", "dead", "metrics"


@dataclass(frozen=True)
class InputRow:
    topic: str
    partition: int
    offset: int
    ts: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True)
class Emitted:
    """An encoded output record bound for one sink topic."""

    topic: str
    key: bytes | None
    value: bytes | None
    ts: int


class RecordRejected(Exception):
    """A record that cannot be decoded; it goes to the dead letters with this reason."""


class TaskRuntime(ABC):
    """The pure-Python side of one task. Picklable; everything it keeps is state."""

    input_topics: frozenset[str]

    def __init__(self) -> None:
        self.metrics: Counter = Counter()
        self.stream_time: int | None = None  # the largest event time the task has seen
        self.ended_topics: set[str] = set()
        self.ended = False

    @abstractmethod
    def process(self, row: InputRow) -> list[Emitted]:
        """Decode and process one record; raise RecordRejected for a bad one."""

    @abstractmethod
    def end_of_input(self) -> list[Emitted]:
        """All inputs are exhausted: advance time to the end and emit what that closes."""

    def counters(self) -> Counter:
        """Everything the task counted so far (its own counts and its operators')."""
        return Counter(self.metrics)


@dataclass
class TaskFunction:
    """The function given to applyInPandasWithState; `new_runtime(task)` builds a fresh runtime."""

    new_runtime: Any
    input_topics: frozenset[str] = field(default_factory=frozenset)

    def __call__(self, key: tuple, frames: Iterator[pd.DataFrame], state) -> Iterator[pd.DataFrame]:
        task = int(key[0])
        runtime: TaskRuntime = cloudpickle.loads(state.get[0]) if state.exists else self.new_runtime(task)
        before = runtime.counters()
        out = process_rows(runtime, _ordered_rows(pd.concat(list(frames), ignore_index=True)))
        if not runtime.ended and runtime.ended_topics >= self.input_topics:
            runtime.ended = True
            out.extend(_sink_rows(runtime.end_of_input()))
        delta = runtime.counters()
        delta.subtract(before)
        figures = {"counts": dict(+delta), "stream_time": runtime.stream_time}
        out.append((METRICS, None, None, None, None, None, task, None, json.dumps(figures)))
        state.update((cloudpickle.dumps(runtime),))
        yield pd.DataFrame(out, columns=[c.split()[0] for c in OUTPUT_SCHEMA.split(", ")])


def process_rows(runtime: TaskRuntime, rows) -> list[tuple]:
    """Output rows for `rows` in order: sink records, and a dead letter for each record the
    runtime rejects (counted; the task goes on). End-of-input markers are noted, not processed."""
    out: list[tuple] = []
    for row in rows:
        if row.offset < 0:
            runtime.ended_topics.add(row.topic)
            continue
        try:
            out.extend(_sink_rows(runtime.process(row)))
        except RecordRejected as rejected:
            runtime.metrics["dead_letters"] += 1
            out.append((DEAD_LETTER, None, row.key, row.value, row.ts, row.topic, row.partition, row.offset, str(rejected)))
    return out


def _sink_rows(emitted: list[Emitted]) -> list[tuple]:
    return [(SINK, e.topic, e.key, e.value, e.ts, None, None, None, None) for e in emitted]


def _ordered_rows(frame: pd.DataFrame) -> Iterator[InputRow]:
    """Kafka Streams record order for one task: queues per input partition in offset order,
    merged by smallest head timestamp."""
    if frame.empty:
        return iter(())
    frame = frame.sort_values(["topic", "partition", "offset"], kind="stable")
    queues = []
    for _, part in frame.groupby(["topic", "partition"], sort=True):
        queues.append([
            InputRow(t, int(p), int(o), int(ts), k, v)
            for t, p, o, ts, k, v in zip(part["topic"], part["partition"], part["offset"], part["ts"], part["key"], part["value"])
        ])
    return merge_in_timestamp_order(queues, timestamp=lambda r: r.ts)
