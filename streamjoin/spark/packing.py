"""A task's rows packed into Arrow IPC blobs for the hops in and out of its Python worker.

`transformWithStateInPandas` hands a group its rows as pandas frames that pyspark builds one row
at a time (`itertuples`, then a frame per 10,000 rows), and takes results back as pandas frames
converted column by column: a few microseconds per row each way, as much as a record's decode.
Packed, a task gets a handful of rows, each a blob of up to ~10,000 records, and returns one:

    source rows (topic, partition, offset, ts, key, value, headers, task)
      ─▶ mapInArrow(pack_by_task): one row (task, rows = IPC blob) per task per Arrow batch
      ─▶ groupBy(task).transformWithStateInPandas: `unpack` → one Arrow table → the task's frame;
         results → one OUTPUT_SCHEMA row, channel PACKED, value = IPC blob of the result rows
      ─▶ foreachBatch: `unpack_results` → the result rows, as if never packed

Every step on the packed side is columnar (Arrow filters and IPC), so the per-row Python work left
is the task's own.
"""

from __future__ import annotations

from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.compute as pc

PACKED_INPUT_SCHEMA = "task int, rows binary"
PACKED = "packed"  # the channel of a result row whose value holds packed result rows
_PACKED_INPUT = pa.schema([("task", pa.int32()), ("rows", pa.binary())])


def to_ipc(data: pa.RecordBatch | pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write(data)
    return sink.getvalue().to_pybytes()


def unpack(blobs: Iterable[bytes]) -> pa.Table:
    """One table of every blob's rows (all share one schema), in blob order."""
    return pa.concat_tables([pa.ipc.open_stream(blob).read_all() for blob in blobs])


def pack_by_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """For mapInArrow: each batch's rows as one blob per task (the `task` column left out)."""
    for batch in batches:
        if not batch.num_rows:
            continue
        tasks = batch.column("task")
        rows = batch.drop_columns(["task"])
        found = pc.unique(tasks).to_pylist()
        blobs = [to_ipc(rows) if len(found) == 1 else to_ipc(rows.filter(pc.equal(tasks, task))) for task in found]
        yield pa.RecordBatch.from_arrays([pa.array(found, pa.int32()), pa.array(blobs, pa.binary())],
                                         schema=_PACKED_INPUT)


def packed_results(rows: list[tuple], schema: pa.Schema) -> bytes:
    """Result rows (tuples in `schema`'s column order) as one blob."""
    columns = list(zip(*rows)) if rows else [()] * len(schema)
    arrays = [pa.array(column, field.type) for column, field in zip(columns, schema)]
    return to_ipc(pa.RecordBatch.from_arrays(arrays, schema=schema))


def unpack_results(table: pa.Table) -> pa.Table:
    """A micro-batch's results with every PACKED row replaced by the rows it holds."""
    channel = table.column("channel")
    packed = pc.equal(channel, PACKED)
    if not pc.any(packed).as_py():
        return table
    inner = unpack(table.filter(packed).column("value").to_pylist())
    return pa.concat_tables([inner.cast(table.schema), table.filter(pc.invert(packed))])
