"""The adapter's row conversions without Spark: Kafka rows as Spark hands them to a task (pandas,
headers null when a record has none, else an array of {key, value} structs) become `InputRow`s
in Kafka Streams order, and emitted records become sink rows that keep their headers."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd

from streamjoin.runtime.contract import Emitted, InputRow, Rejected, TaskRuntime
from streamjoin.spark.adapter import (
    COLUMNS,
    DEAD_LETTER,
    SINK,
    cycle_collection_paused,
    ordered_rows,
    output_rows,
)


def frame(with_headers: bool) -> pd.DataFrame:
    data = {"topic": ["r", "l", "l"], "partition": [0, 0, 0], "offset": [0, 1, 0], "ts": [5, 7, 6],
            "key": [b"k", b"k", b"k"], "value": [b"1", b"3", b"2"]}
    if with_headers:
        data["headers"] = [np.array([{"key": "a", "value": b"!"}, {"key": "a", "value": None}], dtype=object),
                           None, None]
    return pd.DataFrame(data)


def test_rows_keep_their_headers_in_kafka_streams_order():
    assert list(ordered_rows(frame(True))) == [
        InputRow("r", 0, 0, 5, b"k", b"1", (("a", b"!"), ("a", None))),  # smallest head timestamp first
        InputRow("l", 0, 0, 6, b"k", b"2", ()),
        InputRow("l", 0, 1, 7, b"k", b"3", ()),
    ]


def test_a_frame_without_a_headers_column_has_rows_without_headers():
    assert {row.headers for row in ordered_rows(frame(False))} == {()}


class _Runtime(TaskRuntime):
    def process(self, row):
        return []

    def end_of_input(self):
        return []


def test_sink_rows_carry_the_emitted_headers_and_dead_letters_none():
    source = InputRow("l", 0, 4, 9, b"k", b"v", (("h", b"x"),))
    rows = output_rows(_Runtime(), [Emitted("out", b"k", b"r", 9, (("h", b"x"),)), Emitted("out", b"k", None, 9),
                                    Rejected("bad")], source)
    by_column = [dict(zip(COLUMNS, row)) for row in rows]
    assert [(r["channel"], r["headers"]) for r in by_column] == [(SINK, (("h", b"x"),)), (SINK, None),
                                                                 (DEAD_LETTER, None)]


def test_cycle_collection_is_paused_for_a_batch_and_restored() -> None:
    assert gc.isenabled()
    with cycle_collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    try:
        with cycle_collection_paused():
            raise RuntimeError("a failing batch")
    except RuntimeError:
        pass
    assert gc.isenabled()
    gc.disable()  # a worker that had it off keeps it off
    try:
        with cycle_collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
