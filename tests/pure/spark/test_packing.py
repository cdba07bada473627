"""Packed rows: what goes into a task's worker and what comes out are the rows themselves, in
order, whatever the packing (one blob per task per Arrow batch; one blob of results)."""

from __future__ import annotations

import pyarrow as pa

from streamjoin.spark.adapter import COLUMNS, METRICS, OUTPUT_ARROW_SCHEMA, SINK
from streamjoin.spark.packing import PACKED, pack_by_task, packed_results, unpack, unpack_results

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
INPUT = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()), ("ts", pa.int64()),
                   ("key", pa.binary()), ("value", pa.binary()), ("headers", HEADERS), ("task", pa.int32())])


def batch(rows: list[tuple]) -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist([dict(zip(INPUT.names, row)) for row in rows], schema=INPUT)


def test_each_task_gets_its_rows_in_order() -> None:
    # A broadcast topic's row reaches both tasks; each task's rows keep their order.
    first = batch([("o", 0, 0, 10, b"a", b"1", None, 0), ("c", 0, 0, 5, b"x", b"{}", None, 0),
                   ("c", 0, 0, 5, b"x", b"{}", None, 1), ("o", 0, 1, 11, b"b", None, [("h", b"v")], 0)])
    second = batch([("o", 1, 0, 12, b"c", b"3", None, 1)])
    packed = list(pack_by_task(iter([first, pa.RecordBatch.from_pylist([], schema=INPUT), second])))
    by_task: dict[int, list[bytes]] = {}
    for part in packed:
        for task, blob in zip(part.column("task").to_pylist(), part.column("rows").to_pylist()):
            by_task.setdefault(task, []).append(blob)
    rows = {task: unpack(blobs).to_pylist() for task, blobs in by_task.items()}
    assert [(r["topic"], r["offset"], r["value"], r["headers"]) for r in rows[0]] == [
        ("o", 0, b"1", None), ("c", 0, b"{}", None), ("o", 1, None, [{"key": "h", "value": b"v"}])]
    assert [(r["topic"], r["partition"]) for r in rows[1]] == [("c", 0), ("o", 1)]
    assert "task" not in unpack(by_task[0]).column_names


def test_results_come_back_as_the_rows_they_were() -> None:
    results = [(SINK, "out", b"k", b"v", 7, "in", 0, 3, None, (("h", b"1"),)),
               (SINK, "out", None, None, 8, None, None, None, None, None),
               ("dead", None, b"raw", b"{", 9, "in", 1, 4, "not JSON", None)]
    metrics = (METRICS, None, None, None, None, None, 0, None, '{"counts": {}}', None)
    spark_side = pa.Table.from_pylist([dict(zip(COLUMNS, row)) for row in [
        (PACKED, None, None, packed_results(results, OUTPUT_ARROW_SCHEMA), *[None] * 6), metrics]],
        schema=OUTPUT_ARROW_SCHEMA)
    table = unpack_results(spark_side)
    assert [tuple(r.values()) for r in table.to_pylist()] == [
        (SINK, "out", b"k", b"v", 7, "in", 0, 3, None, [{"key": "h", "value": b"1"}]),
        (SINK, "out", None, None, 8, None, None, None, None, None),
        ("dead", None, b"raw", b"{", 9, "in", 1, 4, "not JSON", None), metrics]


def test_no_results_is_an_empty_blob() -> None:
    empty = unpack([packed_results([], OUTPUT_ARROW_SCHEMA)])
    assert empty.num_rows == 0 and empty.schema == OUTPUT_ARROW_SCHEMA
