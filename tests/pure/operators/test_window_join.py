"""s-Server windowed stream-stream joins (RANGE / ROWS windows per input)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import pytest

from tests.pure.operators.conformance_inputs import case_records, column, conformance_case, run_and_compare
from streamjoin.operators.base import END_OF_TIME, Change, Record, Side
from streamjoin.operators.base import JoinType
from streamjoin.operators.window_join import RangeWindow, RowsWindow, WindowJoin, WindowJoinConfig

L, R = Side.LEFT, Side.RIGHT
MINUTE = 60_000


def rec(side: Side, ts: int, v: str, key: str | None = "k") -> Record:
    return Record(side, key, {"v": v}, ts)


def rows(changes: list[Change]) -> list[tuple]:
    return [(column(c.left, "v"), column(c.right, "v"), c.ts) for c in changes]


@dataclass
class Case:
    name: str
    config: WindowJoinConfig
    inputs: list[Record]
    expected: list[tuple]
    late: int = 0


RANGE_10 = RangeWindow(10)

CASES = [
    # Output waits for the joined clock = min(left clock, right clock).
    #   L a@5 (clock -inf) ; R x@7 (clock 5: a enters, no pair) ; L b@9 (clock 7) -> [a,x]@7
    Case("clock_is_min_of_inputs", WindowJoinConfig(RANGE_10, RANGE_10),
         [rec(L, 5, "a"), rec(R, 7, "x"), rec(L, 9, "b")], [("a", "x", 7)]),
    # Endpoints included: a@0 is still in a 10 ms window at 10, gone at 11.
    #   L a@0 ; R x@10 -> [a,x]@10 ; R y@11 ; L b@20 (clock 11) -> nothing for y
    Case("range_endpoint_inclusive", WindowJoinConfig(RANGE_10, RANGE_10),
         [rec(L, 0, "a"), rec(R, 10, "x"), rec(R, 11, "y"), rec(L, 20, "b")], [("a", "x", 10)]),
    # Each side its own window: left keeps 10 ms, right only the current row.
    #   R x@0 ; L a@5 (x out of the right's CURRENT ROW window) ; L b@6, R y@12 -> [a,y]@12 (b too)
    Case("own_window_per_side", WindowJoinConfig(RANGE_10, RangeWindow(0)),
         [rec(R, 0, "x"), rec(L, 5, "a"), rec(L, 6, "b"), rec(R, 12, "y"), rec(L, 13, "c")],
         [("a", "y", 12), ("b", "y", 12)]),
    # RANGE BETWEEN 10 PRECEDING AND 5 PRECEDING on the left: a row enters 5 ms after its rowtime.
    #   L a@0 (enters at 5) ; R x@3 (a not in yet) ; R y@7 -> [a,y]@7 ; R z@11 (a left at 10)
    Case("range_between_preceding", WindowJoinConfig(RangeWindow(10, 5), RangeWindow(0)),
         [rec(L, 0, "a"), rec(R, 3, "x"), rec(R, 7, "y"), rec(R, 11, "z"), rec(L, 30, "b")],
         [("a", "y", 7)]),
    # ROWS 1 PRECEDING: the latest two rows of the stream, whatever their key.
    #   L a@1 ; L b@2 (other key) ; L c@3 -> window {b, c} ; R x@4 -> [c,x]@4 only
    Case("rows_window_counts_all_keys", WindowJoinConfig(RowsWindow(1), RowsWindow(0)),
         [rec(L, 1, "a"), rec(L, 2, "b", key="other"), rec(L, 3, "c"), rec(R, 4, "x"), rec(L, 5, "d")],
         [("c", "x", 4)]),
    # FULL: unmatched at its instant -> padded at its rowtime; a later pair is another row.
    #   L a@1, R x@1 (another key): instant 1 -> [a,null]@1, [null,x]@1 ; R y@2 -> [a,y]@2
    #   (L b@3 waits: clock min(3, 2) = 2)
    Case("full_outer_at_instant", WindowJoinConfig(RANGE_10, RANGE_10, JoinType.FULL),
         [rec(L, 1, "a"), rec(R, 1, "x", key="other"), rec(R, 2, "y"), rec(L, 3, "b", key="b")],
         [("a", None, 1), (None, "x", 1), ("a", "y", 2)]),
    # Rows of one instant (both inputs) pair once, and none of them is unmatched.
    #   instant 1: a, x -> [a,x]@1 ; instant 2: b, y -> [b,x]@2, [a,y]@2, [b,y]@2
    Case("same_instant_pairs_once", WindowJoinConfig(RANGE_10, RANGE_10, JoinType.FULL),
         [rec(L, 1, "a"), rec(R, 1, "x"), rec(L, 2, "b"), rec(R, 2, "y")],
         [("a", "x", 1), ("b", "x", 2), ("a", "y", 2), ("b", "y", 2)]),
    # CROSS ignores keys; a residual rejects pairs (for LEFT: rejected = unmatched).
    Case("cross", WindowJoinConfig(RANGE_10, RANGE_10, JoinType.CROSS),
         [rec(L, 1, "a", key="p"), rec(R, 2, "x", key="q"), rec(L, 3, "b")],
         [("a", "x", 2)]),
    Case("residual_left",
         WindowJoinConfig(RANGE_10, RANGE_10, JoinType.LEFT, residual=lambda l, r: l["v"] > r["v"]),
         [rec(R, 1, "m"), rec(L, 2, "a"), rec(L, 3, "z"), rec(R, 4, "n")],
         [("a", None, 2), ("z", "m", 3)]),
    # A row behind the processed instants is late (s-Server streams are rowtime-ordered).
    Case("late_row_dropped", WindowJoinConfig(RANGE_10, RANGE_10),
         [rec(L, 5, "a"), rec(R, 6, "x"), rec(L, 8, "b"), rec(R, 2, "old")],
         [("a", "x", 6)], late=1),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_window_join_cases(case: Case) -> None:
    join = WindowJoin(case.config)
    assert rows(join.process_all(case.inputs)) == case.expected
    assert join.metrics["late"] == case.late


def stock_sides(case: dict) -> dict[str, Side]:
    return {s["name"]: L if "order" in s["name"] else R for s in case["sources"]}


def stock_projection(oq, sp) -> dict:
    return {"TICKER": column(sp, "TICKER"), "QUANTITY": column(oq, "QUANTITY"),
            "ENDING_PRICE": column(sp, "ENDING_PRICE")}


ONE_MINUTE_EACH = dict(left_window=RangeWindow(MINUTE), right_window=RangeWindow(MINUTE))


@pytest.mark.parametrize("case_id, join_type", [
    ("sqlstream.range_1m.inner.initial", JoinType.INNER),
    ("sqlstream.range_1m.inner.after_insert", JoinType.INNER),
    ("sqlstream.range_1m.inner.using", JoinType.INNER),
    ("sqlstream.range_1m.inner.natural", JoinType.INNER),
    ("sqlstream.range_1m.left.initial", JoinType.LEFT),
    ("sqlstream.range_1m.right.initial", JoinType.RIGHT),
    ("sqlstream.range_1m.full.initial", JoinType.FULL),
    ("sqlstream.range_1m.left.after_insert", JoinType.LEFT),
    ("sqlstream.range_1m.right.after_insert", JoinType.RIGHT),
    ("sqlstream.range_1m.full.after_insert", JoinType.FULL),
    ("sqlstream.range_1m.cross.initial", JoinType.CROSS),
])
def test_sqlstream_range_conformance(case_id: str, join_type: JoinType) -> None:
    case = conformance_case(case_id)
    sides = stock_sides(case)
    run_and_compare(case_id, WindowJoin(WindowJoinConfig(**ONE_MINUTE_EACH, join_type=join_type)),
                    sides, stock_projection, {name: "TICKER" for name in sides})


@pytest.mark.parametrize("case_id", ["sqlstream.range_1m.cross_where", "sqlstream.range_1m.comma_where"])
def test_sqlstream_cross_then_where(case_id: str) -> None:
    """CROSS JOIN / comma join, then WHERE sp.ticker = oq.ticker as a filter after the join."""
    sides = stock_sides(conformance_case(case_id))
    run_and_compare(case_id, WindowJoin(WindowJoinConfig(**ONE_MINUTE_EACH, join_type=JoinType.CROSS)),
                    sides, stock_projection, {name: "TICKER" for name in sides},
                    where=lambda c: c.left["TICKER"] == c.right["TICKER"])


def test_sqlstream_rows_5_preceding() -> None:
    case_id = "sqlstream.rows_5_preceding.inner"
    sides = stock_sides(conformance_case(case_id))
    run_and_compare(case_id, WindowJoin(WindowJoinConfig(RowsWindow(5), RowsWindow(5))),
                    sides, stock_projection, {name: "TICKER" for name in sides})


def test_sqlstream_multiway_chained() -> None:
    """(bids b1 1 h JOIN asks 2 s) JOIN bids b2 3 min: the first join's rows (ts = their
    rowtime) are the second join's left input, whose window is the default CURRENT ROW; the
    first join's output clock advances the second join's left clock."""
    case = conformance_case("sqlstream.multiway.bids_asks_bids")
    hour, second = 60 * MINUTE, 1000
    first = WindowJoin(WindowJoinConfig(RangeWindow(hour), RangeWindow(2 * second)))
    second_join = WindowJoin(WindowJoinConfig(RangeWindow(0), RangeWindow(3 * MINUTE)))
    out: list[Change] = []
    for record in case_records(case, {"bids": L, "asks": R}, {"bids": "ticker", "asks": "ticker"}):
        if record.side is L:  # a bid feeds both b1 (left of the first) and b2 (right of the second)
            out += second_join.process(Record(R, record.key, record.value, record.ts, record.seq))
        for c in first.process(record):
            out += second_join.process(Record(L, c.key, {"b1": c.left, "asks": c.right}, c.ts, record.seq))
        out += second_join.advance_side(L, first.output_clock)
    got = sorted((c.left["b1"]["price"], c.left["asks"]["price"], c.right["price"], c.ts) for c in out)
    want = sorted((e["value"]["B1_PRICE"], e["value"]["ASK_PRICE"], e["value"]["B2_PRICE"], e["ts"])
                  for e in case["expected"])
    assert got == want


def test_resumes_after_pickle() -> None:
    """The Spark adapter checkpoints a task's processors by pickling them."""
    def make() -> WindowJoin:
        return WindowJoin(WindowJoinConfig(RANGE_10, RowsWindow(1), JoinType.FULL))

    before, after = [rec(L, 1, "a"), rec(R, 2, "x"), rec(L, 4, "b")], [rec(R, 5, "y"), rec(L, 30, "c")]
    whole, resumed = make(), make()
    whole.process_all(before)
    resumed.process_all(before)
    resumed = pickle.loads(pickle.dumps(resumed))
    expected = whole.process_all(after) + whole.advance_to(END_OF_TIME)
    assert expected and resumed.process_all(after) + resumed.advance_to(END_OF_TIME) == expected
