"""Where a task's records enter its pipeline (`Entry`) and how its results leave it
(`SinkBinding`): configuration fixed at compile time, read by the task (runtime.task), its fast
paths (runtime.lookup, runtime.within) and the run encoder (runtime.encoding); and what the fast
paths use of the task (`Runtime`)."""

from __future__ import annotations

from dataclasses import dataclass
from collections import Counter
from typing import Any, Callable, Protocol

from streamjoin.operators.base import Side
from streamjoin.runtime.contract import InputRow, Output
from streamjoin.runtime.stages import Env, Event, Stage
from streamjoin.serde.formats import SerdeSpec


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


class Runtime(Protocol):
    """What a fast path (runtime.lookup, runtime.within) uses of its task's runtime:
    `runtime.task.PipelineRuntime`, which builds its fast paths and so cannot be imported by them."""

    task: int
    inputs: dict[str, tuple[SerdeSpec, tuple[Entry, ...]]]
    sink: SinkBinding
    uses_watermarks: bool
    metrics: Counter
    seconds: Counter
    stream_time: int | None

    def process_record(self, row: InputRow) -> list[Output]: ...

    def emit(self, events: list[Event], headers: tuple, out: list[Output]) -> list[Output]: ...
