"""Flink's window join (operators/window_tvf_join.py): each window joined once, when the
watermark passes its end; every join type, late rows, NULL keys, restart from a pickle."""

from __future__ import annotations

import pickle

import pytest

from streamjoin.operators.base import END_OF_TIME, JoinType, Record, RowKind, Side
from streamjoin.operators.window_tvf_join import WindowTvfJoin, WindowTvfJoinConfig
from tests.pure.operators.conformance_inputs import column

L, R = Side.LEFT, Side.RIGHT
SIZE = 5_000  # TUMBLE 5 s: a row at t belongs to [t - t % 5 s, + 5 s)


def rec(side: Side, ts: int, v: str, key: str | None = "k") -> Record:
    end = ts - ts % SIZE + SIZE
    return Record(side, key, {"v": v, "end": end}, ts)


def window_end(row: dict) -> int:
    return row["end"]


def join(join_type=JoinType.INNER, residual=None) -> WindowTvfJoin:
    return WindowTvfJoin(WindowTvfJoinConfig(window_end, window_end, join_type, residual))


def rows(changes) -> list[tuple]:
    return sorted(((column(c.left, "v"), column(c.right, "v"), c.ts) for c in changes), key=str)


def test_docstring_timeline():
    # LEFT JOIN on name, TUMBLE 5 s (ms): a, b in [0, 5) wait for the watermark; R b@4 is late.
    op = join(JoinType.LEFT)
    assert op.process_all([rec(L, 1000, "a", key="a"), rec(R, 2000, "a", key="a"), rec(L, 3000, "b", key="b")]) == []
    assert op.advance_watermark(L, 4_999) == []  # the right input's watermark is still behind
    assert rows(op.advance_watermark(R, 6_000)) == [("a", "a", 4_999), ("b", None, 4_999)]
    assert op.process(rec(R, 4000, "b", key="b")) == [] and op.metrics["late"] == 1
    op.process(rec(L, 7000, "c", key="c"))
    assert rows(op.advance_to(END_OF_TIME)) == [("c", None, 9_999)]


#   [0, 5):  L A@1, L B@2 (key k) ; R x@3 (key k), R y@4 (key other)
#   [5, 10): L C@6 (key k)        ; R z@7 (key k)
INPUTS = [rec(L, 1000, "A"), rec(L, 2000, "B"), rec(R, 3000, "x"), rec(R, 4000, "y", key="other"),
          rec(L, 6000, "C"), rec(R, 7000, "z")]


@pytest.mark.parametrize("join_type, expected", [
    (JoinType.INNER, [("A", "x", 4_999), ("B", "x", 4_999), ("C", "z", 9_999)]),
    (JoinType.LEFT, [("A", "x", 4_999), ("B", "x", 4_999), ("C", "z", 9_999)]),
    (JoinType.RIGHT, [("A", "x", 4_999), ("B", "x", 4_999), ("C", "z", 9_999), (None, "y", 4_999)]),
    (JoinType.FULL, [("A", "x", 4_999), ("B", "x", 4_999), ("C", "z", 9_999), (None, "y", 4_999)]),
    (JoinType.SEMI, [("A", None, 4_999), ("B", None, 4_999), ("C", None, 9_999)]),
    (JoinType.ANTI, []),
])
def test_join_types(join_type, expected):
    op = join(join_type)
    assert op.process_all(INPUTS) == []
    assert rows(op.advance_to(END_OF_TIME)) == sorted(expected, key=str)


def test_residual_and_null_keys():
    # ON ... AND L.v < R.v: A < x but not z < x; a NULL key matches nothing (ANTI keeps it).
    inputs = [rec(L, 1000, "A"), rec(L, 1500, "z"), rec(L, 2000, "N", key=None), rec(R, 3000, "x")]
    op = join(JoinType.ANTI, residual=lambda l, r: l["v"] < r["v"])
    op.process_all(inputs)
    assert rows(op.advance_to(END_OF_TIME)) == [("N", None, 4_999), ("z", None, 4_999)]


def test_windows_fire_in_end_order_and_state_is_released():
    op = join()
    op.process_all([rec(L, 6000, "C"), rec(R, 7000, "z"), rec(L, 1000, "A"), rec(R, 2000, "x")])
    first = op.advance_to(5_000)
    assert rows(first) == [("A", "x", 4_999)] and len(op.windows) == 1
    assert rows(op.advance_to(9_999)) == [("C", "z", 9_999)] and len(op.windows) == len(op.keys_of) == 0


def test_retractions_are_not_window_input():
    op = join()
    assert op.process(Record(L, "k", {"v": "A", "end": SIZE}, 1000, kind=RowKind.DELETE)) == []
    assert op.metrics["retraction"] == 1


def test_resumes_after_pickle():
    whole, resumed = join(JoinType.FULL), join(JoinType.FULL)
    for op in (whole, resumed):
        op.process_all(INPUTS[:3])
    resumed = pickle.loads(pickle.dumps(resumed))
    expected = whole.process_all(INPUTS[3:]) + whole.advance_to(END_OF_TIME)
    assert resumed.process_all(INPUTS[3:]) + resumed.advance_to(END_OF_TIME) == expected
