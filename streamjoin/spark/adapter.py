"""Runs a compiled sub-topology inside Spark: one stateful group per task.

A task is one Kafka partition number of the (co-partitioned) input topics, as in Kafka Streams.
`transformWithStateInPandas` hands each task its micro-batch rows; the task's `TaskRuntime` (pure
Python: decode, join operators, project, encode) is checkpointed in the task's one map state: its
stores as key-group pages, the rest pickled beside them (`paged_state`), so a
restart from the checkpoint resumes exactly where the last committed batch left it, and a batch
reads and writes only the pages of the keys it touched.

A task's rows are its records as Spark's Kafka connector reads them, or chunks of records packed
by streamjoin_kafka (`packing`). Within a batch the records are replayed in Kafka Streams order:
per input partition in offset order, always taking the head record with the smallest timestamp
(`merge_in_timestamp_order`).

Rows with a negative offset are end-of-input markers from a bounded source (one per input
partition): once a task has one for every input topic, it advances time to the end, which closes
every window (a bounded Flink source's final watermark).
"""

from __future__ import annotations

import json
import pickle
from itertools import repeat
from operator import itemgetter
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from pyspark import cloudpickle
from pyspark.sql.streaming.stateful_processor import (
    StatefulProcessor,
    StatefulProcessorHandle,
)
from pyspark.sql.types import BinaryType, IntegerType, StringType, StructField, StructType

from streamjoin.operators.ordering import merge_in_timestamp_order
from streamjoin.runtime.contract import Emitted, EmittedColumns, InputRow, Output, TaskRuntime, without_replay_header
from streamjoin.runtime.report import Laps
from streamjoin.spark.collector import cycle_collection_paused
from streamjoin.spark.paged_state import load_runtime, save_runtime
from streamjoin.spark.task_keys import task_of

if TYPE_CHECKING:
    import pandas as pd

    from streamjoin.spark.task_sink import TaskSink

# What a task emits: sink records, dead letters and metric deltas, told apart by `channel`.
OUTPUT_SCHEMA = (
    "channel string, topic string, key binary, value binary, ts long, "
    "src_topic string, src_partition int, src_offset long, reason string, "
    "headers array<struct<key:string,value:binary>>"
)
# One state variable per task: Spark's state server builds its encoders anew for every variable a
# task declares, in every batch (measured: a value state ~30 ms and a map state ~50 ms a task).
# Schemas as types, not DDL strings, which pyspark sends to the JVM to parse, twice per variable.
TASK_STATE = "task"
PAGE_KEY_SCHEMA = StructType([StructField("store", StringType()), StructField("page", IntegerType())])
PAGE_SCHEMA = StructType([StructField("data", BinaryType())])
RUNTIME_KEY = ("", 0)  # beside the pages, whose store ids are never empty
SINK, DEAD_LETTER, METRICS = "sink", "dead", "metrics"

COLUMNS = [c.split()[0] for c in OUTPUT_SCHEMA.split(", ")]


class MapStatePages:
    """A task's state in one map state: its store pages, keyed by (store id, key group), and its
    pickled runtime (`RUNTIME_KEY`)."""

    def __init__(self, state) -> None:
        self.state = state

    def runtime(self) -> bytes | None:
        """The saved runtime; None for a task that has none yet."""
        found = self.state.getValue(RUNTIME_KEY)
        return None if found is None else found[0]

    def keep_runtime(self, blob: bytes) -> None:
        self.state.updateValue(RUNTIME_KEY, (blob,))

    def load(self, store: str, group: int) -> bytes | None:
        found = self.state.getValue((store, group))
        return None if found is None else found[0]

    def save(self, store: str, group: int, page: bytes | None) -> None:
        if page is None:
            self.state.removeKey((store, group))
        else:
            self.state.updateValue((store, group), (page,))


class TaskProcessor(StatefulProcessor):
    """The processor given to transformWithStateInPandas.

    Spark also unpickles it in a short-lived driver process at every query start, only to call
    `init` and learn the state schemas. So the runtime factory travels as bytes, unpickled on a
    task's first use, and pandas and pyarrow (`packing`) are imported there too: that process then
    needs neither the compiler (sqlglot) nor pandas, ~1.3 s less per query start on this machine,
    nor pyarrow and numpy (~0.25 s more)."""

    def __init__(self, new_runtime: Callable[[int], TaskRuntime],
                 input_topics: frozenset[str] = frozenset(), sink: TaskSink | None = None) -> None:
        self.factory = cloudpickle.dumps(new_runtime)
        self.input_topics = input_topics
        self.sink = sink

    @cached_property
    def _build(self) -> Callable[[int], TaskRuntime]:
        return pickle.loads(self.factory)

    def new_runtime(self, task: int) -> TaskRuntime:
        """A fresh runtime for a task that has no state yet."""
        return self._build(task)

    def __getstate__(self) -> dict:
        return {"factory": self.factory, "input_topics": self.input_topics, "sink": self.sink}

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.pages = MapStatePages(handle.getMapState(TASK_STATE, PAGE_KEY_SCHEMA, PAGE_SCHEMA))

    def handleInputRows(self, key: tuple, rows: Iterator[pd.DataFrame], timerValues) -> Iterator[pd.DataFrame]:
        with cycle_collection_paused():  # until the batch's objects are released (`collector`)
            yield from self._batch(task_of(int(key[0])), rows)

    def _batch(self, task: int, rows: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        import pandas as pd  # see the class docstring

        lap = Laps()
        early = self.sink.open_early(task) if self.sink is not None else None  # runs while the batch does
        saved = self.pages.runtime()
        runtime: TaskRuntime = self.new_runtime(task) if saved is None else load_runtime(saved, self.pages)
        runtime.seconds.clear()  # this batch's profile only
        before = runtime.counters()
        lap("state_read")
        ordered = list(ordered_rows(pd.concat(list(rows), ignore_index=True)))
        lap("ordering")
        out = process_rows(runtime, ordered)
        if not runtime.ended and runtime.ended_topics >= self.input_topics:
            runtime.ended = True
            out.extend(output_rows(runtime, runtime.end_of_input(), None))
        lap("processing")  # decode + operators + encode, split in runtime.seconds
        self.pages.keep_runtime(save_runtime(runtime, self.pages))
        lap("state_write")
        sent: dict = {}
        if self.sink is not None:  # results and dead letters leave from here (`task_sink`)
            out, sent = self.sink.emit(out, task, early)
            runtime.metrics["dead_letters"] += sent["refused_by_kafka"] + sent["rejected_by_table"]
            lap("produce")
            packed = pd.DataFrame(out, columns=COLUMNS)
        else:
            packed = packed_frame(out)
        del ordered, out
        yield packed
        lap("output_frame")
        delta = runtime.counters()
        delta.subtract(before)
        seconds = {**lap.seconds, **runtime.seconds}
        seconds["processing_other"] = seconds.pop("processing") - sum(runtime.seconds.values())
        figures = {"counts": dict(+delta), "stream_time": runtime.stream_time, "seconds": seconds, **sent}
        yield pd.DataFrame([(METRICS, None, None, None, None, None, task, None, json.dumps(figures), None)],
                           columns=COLUMNS)

    def close(self) -> None:
        pass


def packed_frame(out: list[tuple]) -> pd.DataFrame:
    """A task's result rows as the one row that carries them (`packing`)."""
    import pandas as pd  # see TaskProcessor's docstring

    from streamjoin.spark.packing import OUTPUT_ARROW_SCHEMA, PACKED, packed_results

    return pd.DataFrame([(PACKED, None, None, packed_results(out, OUTPUT_ARROW_SCHEMA), *[None] * 6)],
                        columns=COLUMNS)


def process_rows(runtime: TaskRuntime, rows) -> list[tuple]:
    """Output rows for `rows` in order: sink records, and a dead letter (counted) for each record
    or result the runtime rejects; the task goes on. End-of-input markers are noted, not processed."""
    out: list[tuple] = []
    append = out.append
    records = []
    for row in rows:
        if row[2] < 0:
            runtime.ended_topics.add(row[0])
        else:
            records.append(row)
    for run, outputs in runtime.process_runs(records):
        if type(outputs) is EmittedColumns:
            out += sink_rows(run, outputs)
            continue
        for row, items in zip(run, outputs):
            topic, partition, offset = row[:3]
            for item in items:
                if type(item) is Emitted:  # the usual output, inline (as `output_rows` writes it)
                    append((SINK, item.topic, item.key, item.value, item.ts, topic, partition, offset, None,
                            item.headers or None))
                else:
                    out += output_rows(runtime, [item], row)
    return out


def sink_rows(run: Sequence[InputRow], emitted: EmittedColumns) -> Iterator[tuple]:
    """The sink rows of a run's outputs given column-wise (as `output_rows` writes them)."""
    sources = [run[index] for index in emitted.indexes]
    headers = [without_replay_header(row.headers) or None for row in sources] \
        if any(map(itemgetter(6), sources)) else repeat(None)  # (6: the headers)
    return zip(repeat(SINK), repeat(emitted.topic), emitted.keys, emitted.values, emitted.times,
               map(itemgetter(0), sources), map(itemgetter(1), sources), map(itemgetter(2), sources),
               repeat(None), headers)


def output_rows(runtime: TaskRuntime, outputs: list[Output], source: InputRow | None) -> list[tuple]:
    """Emitted records as sink rows and rejections as dead-letter rows, both with the coordinates
    of the input record they came from (`source`; None for what closing the windows at the end of
    input emits); a dead letter also carries that record's raw key and value."""
    rows = []
    where = (None, None, None) if source is None else (source.topic, source.partition, source.offset)
    for item in outputs:
        if isinstance(item, Emitted):
            rows.append((SINK, item.topic, item.key, item.value, item.ts, *where, None, item.headers or None))
            continue
        runtime.metrics["dead_letters"] += 1
        raw = (None, None, None) if source is None else (source.key, source.value, source.ts)
        rows.append((DEAD_LETTER, None, *raw, *where, item.reason, None))
    return rows


def ordered_rows(frame: pd.DataFrame) -> Iterator[InputRow]:
    """Kafka Streams record order for one task's rows, packed (`packing.PACKED_INPUT_DDL`) or a row
    a record (`packing.row_queues`): a queue per input partition in offset order, the queues in
    (topic, partition) order, merged by smallest head timestamp."""
    from streamjoin.spark.packing import chunk_queues, row_queues  # see TaskProcessor's docstring

    queues = chunk_queues(frame) if "records" in frame.columns else row_queues(frame)
    if len(queues) <= 1:
        return iter(queues[0] if queues else ())
    return merge_in_timestamp_order(queues, timestamp=itemgetter(3))
