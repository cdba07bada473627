"""Rows packed into Arrow IPC blobs for the hops between Spark and a task's Python worker.

Spark moves rows one by one: into its own row format after the source, through the shuffle to a
task, and to the task's Python worker as Arrow, which pyspark turns into pandas, then into
single rows to group them by key, then into pandas again. Packed, a whole chunk of records
travels as one row, and the Python code at each end converts it column-wise:

    way in   source: a chunk of one partition's records ─▶ pack_records ─▶ one PACKED_INPUT_DDL row
             task: its rows of the micro-batch ─▶ unpack_records per chunk ─▶ InputRows
    way out  task: result rows ─▶ packed_results ─▶ one OUTPUT_SCHEMA row (channel PACKED)
             driver: df.toArrow() ─▶ unpack_results ─▶ the result rows, as if never packed

The way in is packed by streamjoin_kafka itself (`streamjoin.packed`), in the Python worker that
reads Kafka anyway. Spark's own connector reads in the JVM, and its rows reach the task as they
are (`row_queues`): packing them would take a Python worker round trip of its own (a `mapInArrow`
step) in every batch, which costs more than the ~1.5 µs a record pyspark's per-row steps take
with one group per task (measured in docs/operations.md, "The connector's rows unpacked").
"""

from __future__ import annotations

import base64
import json
from itertools import groupby, repeat
from operator import itemgetter
from typing import Iterable

import pyarrow as pa

from streamjoin.runtime.contract import InputRow

PACKED = "packed"  # the channel of a result row whose value holds packed result rows

# A chunk of one partition's records: the row the source gives a task, and the blob in it.
PACKED_INPUT_DDL = "topic string, partition int, offset long, records binary"
PACKED_INPUT_SCHEMA = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                                 ("records", pa.binary())])
_HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
RECORD_SCHEMA = pa.schema([("offset", pa.int64()), ("ts", pa.int64()), ("key", pa.binary()),
                           ("value", pa.binary()), ("headers", _HEADERS)])
# A task's result rows, as Arrow: the columns of `adapter.OUTPUT_SCHEMA`.
OUTPUT_ARROW_SCHEMA = pa.schema([
    ("channel", pa.string()), ("topic", pa.string()), ("key", pa.binary()), ("value", pa.binary()),
    ("ts", pa.int64()), ("src_topic", pa.string()), ("src_partition", pa.int32()), ("src_offset", pa.int64()),
    ("reason", pa.string()), ("headers", _HEADERS),
])


def to_ipc(data: pa.RecordBatch | pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        writer.write(data)
    return sink.getvalue().to_pybytes()


def record_batch(offsets: list, timestamps_ms: list, keys: list, values: list, headers: list) -> pa.RecordBatch:
    """Records of one partition, column-wise; `headers` are a record's (key, bytes) pairs, and
    null when it has none (most records: no per-record lists to build)."""
    if any(headers):
        header_column = pa.array([[{"key": k, "value": v} for k, v in h] if h else None for h in headers], _HEADERS)
    else:
        header_column = pa.nulls(len(offsets), _HEADERS)
    return pa.RecordBatch.from_arrays([pa.array(offsets, pa.int64()), pa.array(timestamps_ms, pa.int64()),
                                       pa.array(keys, pa.binary()), pa.array(values, pa.binary()), header_column],
                                      schema=RECORD_SCHEMA)


def pack_records(topic: str, partition: int, records: pa.RecordBatch) -> pa.RecordBatch:
    """One PACKED_INPUT row holding `records`, at the offset of its first record."""
    first = records.column("offset")[0].as_py() if records.num_rows else -1
    return pa.RecordBatch.from_arrays([pa.array([topic]), pa.array([partition], pa.int32()), pa.array([first], pa.int64()),
                                       pa.array([to_ipc(records)], pa.binary())], schema=PACKED_INPUT_SCHEMA)


def _json_headers(text: str) -> list[dict]:
    """Spark's JSON of a record's headers (a binary value is base64 there) as {key, value} pairs."""
    return [{"key": h["key"], "value": None if h.get("value") is None else base64.b64decode(h["value"])}
            for h in json.loads(text)]


def unpack_records(topic: str, partition: int, blob: bytes) -> list[InputRow]:
    """The records of one packed row, in offset order, as a task reads them."""
    records = pa.ipc.open_stream(blob).read_all()
    count = records.num_rows
    headers = records.column("headers")
    header_rows = repeat((), count) if headers.null_count == count else map(_header_pairs, headers.to_pylist())
    return list(map(InputRow._make, zip(repeat(topic, count), repeat(partition, count),
                                        records.column("offset").to_pylist(), records.column("ts").to_pylist(),
                                        records.column("key").to_pylist(), records.column("value").to_pylist(),
                                        header_rows)))


def chunk_queues(frame) -> list[list[InputRow]]:
    """A task's packed rows (a pandas frame of PACKED_INPUT rows): one queue of InputRows per
    partition, its chunks in offset order, the queues sorted by (topic, partition)."""
    chunks = sorted(zip(frame["topic"].tolist(), frame["partition"].tolist(), frame["offset"].tolist(),
                        frame["records"].tolist()), key=itemgetter(0, 1, 2))
    queues = []
    for (topic, partition), group in groupby(chunks, key=itemgetter(0, 1)):
        queue: list[InputRow] = []
        for chunk in group:
            queue += unpack_records(topic, partition, chunk[3])
        queues.append(queue)
    return queues


def row_queues(frame) -> list[list[InputRow]]:
    """Spark's Kafka rows as a task receives them unpacked (a pandas frame of topic, partition,
    offset, ts as epoch ms, key, value, headers as JSON text or null; in any order): one queue of
    InputRows per partition, in offset order, the queues sorted by (topic, partition) as
    `chunk_queues` sorts them. Column-wise: a partition's rows are sorted only
    when the shuffle did not keep them in offset order."""
    import numpy as np

    queues = []
    for (topic, partition), part in frame.groupby(["topic", "partition"], sort=True):
        offsets = part["offset"].to_numpy()
        if len(offsets) > 1 and not (offsets[1:] > offsets[:-1]).all():
            part = part.iloc[np.argsort(offsets, kind="stable")]
        count, headers = len(part), part["headers"]
        header_rows = repeat((), count) if headers.isna().all() else \
            [_header_pairs(None if text is None else _json_headers(text)) for text in headers.tolist()]
        queues.append(list(map(InputRow._make, zip(repeat(str(topic), count), repeat(int(partition), count),
                                                   part["offset"].tolist(), part["ts"].tolist(),
                                                   part["key"].tolist(), part["value"].tolist(), header_rows))))
    return queues


def _header_pairs(headers: list[dict] | None) -> tuple:
    return () if headers is None else tuple((h["key"], h["value"]) for h in headers)


def unpack(blobs: Iterable[bytes]) -> pa.Table:
    """One table of every blob's rows (all share one schema), in blob order."""
    return pa.concat_tables([pa.ipc.open_stream(blob).read_all() for blob in blobs])


def packed_results(rows: list[tuple], schema: pa.Schema) -> bytes:
    """Result rows (tuples in `schema`'s column order) as one blob."""
    # A pass per column: zip(*rows) over a task's 500,000 rows took ~3× as long.
    arrays = [pa.array([row[i] for row in rows], field.type) for i, field in enumerate(schema)]
    return to_ipc(pa.RecordBatch.from_arrays(arrays, schema=schema))


def unpack_results(table: pa.Table) -> pa.Table:
    """A micro-batch's results with every PACKED row replaced by the rows it holds (on the driver:
    the read tasks and the planning processes that import this module need no pyarrow.compute)."""
    import pyarrow.compute as pc

    channel = table.column("channel")
    packed = pc.equal(channel, PACKED)
    if not pc.any(packed).as_py():
        return table
    inner = unpack(table.filter(packed).column("value").to_pylist())
    return pa.concat_tables([inner.cast(table.schema), table.filter(pc.invert(packed))])
