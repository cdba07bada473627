"""The same compiled query in batch mode (backfills, streaming == batch checks).

The bounded input is read with the Kafka batch reader, each task's records are replayed in the
order the streaming query would process them (`adapter.ordered_rows`), through a fresh runtime,
and the input's end closes every window (END_OF_TIME). No state survives the run. Each task's
results come back packed, as a streaming task's do.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
from pyspark.sql import SparkSession

from streamjoin.spark.adapter import (
    COLUMNS,
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
from streamjoin.spark.session import kafka_source_for_query
from streamjoin.spark.task_keys import task_of


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


def run_batch(spark: SparkSession, function: TaskProcessor, topics: tuple[str, ...], kafka_options: dict[str, str],
              ending_timestamp: int | None = None, routing: TaskRouting = TaskRouting()) -> pa.Table:
    """Every sink record the query emits over its input up to `ending_timestamp` (all of it when
    None), as an Arrow table (topic, key, value, ts, …)."""
    reader = (spark.read.format(kafka_source_for_query(spark)).options(**kafka_options)
              .option("subscribe", ",".join(topics)).option("startingOffsets", "earliest")
              .option("streamjoin.packed", "true"))
    if ending_timestamp is not None:
        reader = reader.option("endingTimestamp", str(ending_timestamp))
    spread = routing.assign(reader.load(), int(spark.conf.get("spark.sql.shuffle.partitions")))
    result = unpack_results(spread.groupBy("task").applyInPandas(_task(function), OUTPUT_SCHEMA).toArrow())
    return result.filter(pa.compute.equal(result.column("channel"), SINK))
