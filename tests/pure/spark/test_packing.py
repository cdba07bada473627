"""Packed results: what a task's worker returns as one blob are its result rows themselves, in
order, beside the rows that were never packed (metrics)."""

from __future__ import annotations

import pyarrow as pa

from streamjoin.spark.adapter import COLUMNS, METRICS, SINK
from streamjoin.spark.packing import OUTPUT_ARROW_SCHEMA, PACKED, packed_results, unpack, unpack_results


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


def test_the_arrow_schema_names_the_output_columns_in_order() -> None:
    assert OUTPUT_ARROW_SCHEMA.names == COLUMNS
