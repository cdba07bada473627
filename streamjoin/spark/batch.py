"""The same compiled query in batch mode (backfills, streaming == batch checks).

The bounded input is read with the Kafka batch reader, each task's records are replayed in the
order the streaming query would process them (`TaskProcessor.ordered`), through a fresh runtime,
and the input's end closes every window (END_OF_TIME). No state survives the run.

`run_batch` brings every result to the driver (a check: streaming == batch); `backfill` does not:
each task converts its results in the time range into the Delta table's rows (`TableRows`) and
delta-spark replaces that range from the executors (`delta_writes.replace_range`); the driver
takes one figures row a task.
"""

from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from streamjoin.delta.rows import TableRows, schema_figure, unified_schema

from streamjoin.spark import delta_writes
from streamjoin.spark.adapter import (
    COLUMNS,
    METRICS,
    OUTPUT_SCHEMA,
    SINK,
    TaskProcessor,
    ordered_rows,
    output_rows,
    packed_frame,
    process_rows,
)
from streamjoin.spark.collector import cycle_collection_paused
from streamjoin.spark.packing import unpack_results
from streamjoin.spark.query import TaskRouting
from streamjoin.settings import KafkaSource
from streamjoin.spark.sources import bounded_rows
from streamjoin.spark.task_keys import task_of
from streamjoin.spark.task_sink import TABLE_ROWS


def _task(function: TaskProcessor):
    def run(frame: pd.DataFrame) -> pd.DataFrame:
        if frame.empty:
            return pd.DataFrame([], columns=COLUMNS)
        with cycle_collection_paused():  # as in a streaming task
            runtime = function.new_runtime(task_of(int(frame["task"].iloc[0])))
            out = process_rows(runtime, ordered_rows(frame))
            out.extend(output_rows(runtime, runtime.end_of_input(), None))
            packed = packed_frame(out)
            del runtime, out
        return packed

    return run


def _table_task(function: TaskProcessor, table_rows: TableRows, start: int, end: int):
    """A backfill task: its results with start <= ts < end as the table's rows (packed), and a
    figures row (rows, rejected)."""
    def run(frame: pd.DataFrame) -> pd.DataFrame:
        from streamjoin.spark.packing import to_ipc

        if frame.empty:
            return pd.DataFrame([], columns=COLUMNS)
        with cycle_collection_paused():
            task = task_of(int(frame["task"].iloc[0]))
            runtime = function.new_runtime(task)
            out = process_rows(runtime, ordered_rows(frame))
            out.extend(output_rows(runtime, runtime.end_of_input(), None))
            records = [(row[2], row[3], row[4]) for row in out if row[0] == SINK and start <= row[4] < end]
            rows, rejected = table_rows.convert(records, task)
            del runtime, out
        figures = json.dumps({"rows": rows.num_rows, "rejected": len(rejected), "schema": schema_figure(rows.schema)})
        return pd.DataFrame([(TABLE_ROWS, None, None, to_ipc(rows), *[None] * 6),
                             (METRICS, None, None, None, None, None, task, None, figures, None)], columns=COLUMNS)

    return run


def backfill(spark: SparkSession, function: TaskProcessor, topics: tuple[str, ...], kafka_options: dict[str, str],
             table_rows: TableRows, start: int, end: int, routing: TaskRouting = TaskRouting(),
             source: KafkaSource = KafkaSource.SPARK) -> dict:
    """Replaces [start, end) of the Delta table at `table_rows.path` by the query's results in
    that range, over its input up to `end`; {"rows": written, "rejected": rows the table refused}."""
    tasks = _spread(spark, topics, kafka_options, end, routing, source)
    results = tasks.groupBy("task").applyInPandas(_table_task(function, table_rows, start, end), OUTPUT_SCHEMA)
    results = results.persist(StorageLevel.MEMORY_AND_DISK)
    try:
        figures = [json.loads(row[0]) for row in results.filter(F.col("channel") == METRICS).select("reason").collect()]
        total = {name: sum(f[name] for f in figures) for name in ("rows", "rejected")}
        if total["rows"]:
            schema = unified_schema([f["schema"] for f in figures if f["rows"]], table_rows.row_schema)
            rows = delta_writes.unpacked(results, TABLE_ROWS, schema)
            delta_writes.replace_range(rows, table_rows.path, "__ts", start, end)
        else:
            delta_writes.delete_range(spark, table_rows.path, "__ts", start, end)
    finally:
        results.unpersist()
    return total


def _spread(spark: SparkSession, topics: tuple[str, ...], kafka_options: dict[str, str],
            ending_timestamp: int | None, routing: TaskRouting, source: KafkaSource) -> DataFrame:
    """The bounded input by task, read with `source`."""
    rows = bounded_rows(spark, source, topics, kafka_options, ending_timestamp)
    return routing.assign(rows, int(spark.conf.get("spark.sql.shuffle.partitions")))


def run_batch(spark: SparkSession, function: TaskProcessor, topics: tuple[str, ...], kafka_options: dict[str, str],
              ending_timestamp: int | None = None, routing: TaskRouting = TaskRouting(),
              source: KafkaSource = KafkaSource.SPARK) -> pa.Table:
    """Every sink record the query emits over its input up to `ending_timestamp` (all of it when
    None), as an Arrow table (topic, key, value, ts, …)."""
    spread = _spread(spark, topics, kafka_options, ending_timestamp, routing, source)
    result = unpack_results(spread.groupBy("task").applyInPandas(_task(function), OUTPUT_SCHEMA).toArrow())
    return result.filter(pa.compute.equal(result.column("channel"), SINK))
