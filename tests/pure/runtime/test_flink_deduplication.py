"""Flink deduplication (`ROW_NUMBER() OVER (PARTITION BY keys ORDER BY time) AS rn ... rn = 1`):
the stage's first/last row per key, through SQL, and as the versioned side of a temporal join."""

from __future__ import annotations

import pytest

from streamjoin.dialect import StreamJoinError
from streamjoin.operators.base import RowKind, Side
from streamjoin.runtime.stages import DeduplicateStage, Event
from tests.pure.runtime.sql_case import row, run_sql, source


def _event(key, v, t):
    return Event(RowKind.INSERT, key, {"r": {"v": v, "t": t}}, t)


@pytest.mark.parametrize("keep_last, inputs, expected", [
    # keep last by t: a@2 -> +I a ; b@5 -> -U a, +U b ; c@4 older: nothing ; d@5 same time: -U b, +U d
    (True, [("a", 2), ("b", 5), ("c", 4), ("d", 5)],
     [[("+I", "a")], [("-U", "a"), ("+U", "b")], [], [("-U", "b"), ("+U", "d")]]),
    # keep first by t: a@2 -> +I a ; b@5 later: nothing ; c@1 earlier: -U a, +U c ; d@1 tie: nothing
    (False, [("a", 2), ("b", 5), ("c", 1), ("d", 1)],
     [[("+I", "a")], [], [("-U", "a"), ("+U", "c")], []]),
])
def test_stage_keeps_first_or_last_by_time(keep_last, inputs, expected):
    stage = DeduplicateStage(keep_last, lambda env: env["r"]["t"])
    out = [[(e.kind.value, e.env["r"]["v"]) for e in stage.on_event(_event(("k",), v, t), Side.LEFT)]
           for v, t in inputs]
    assert out == expected


RATES = [source("history", {"cur": "STRING", "rate": "INT", "t": "TIMESTAMP(3)"}, timestamp="t"),
         source("orders", {"oid": "INT", "cur": "STRING", "ot": "TIMESTAMP(3)"}, key=["oid"], timestamp="ot")]


def _rate(second, cur, rate):
    return row("history", second * 1000, {"cur": cur, "rate": rate, "t": f"1970-01-01 00:00:{second:02d}.000"})


def _order(second, oid, cur):
    return row("orders", second * 1000, {"cur": cur, "ot": f"1970-01-01 00:00:{second:02d}.000"}, key=oid)


DEDUP = ("SELECT cur, rate, t FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY cur ORDER BY t {0}) AS rn "
         "FROM history) WHERE rn = 1")


@pytest.mark.parametrize("order, expected", [("", [("EUR", 10)]), ("DESC", [("EUR", 10), ("EUR", 12)])])
def test_deduplicated_rows_as_an_upsert_result(order, expected):
    out = run_sql(DEDUP.format(order), RATES, [_rate(1, "EUR", 10), _rate(3, "EUR", 12), _rate(2, "EUR", 11)])
    assert [(key, value["rate"]) for key, value in out] == expected  # keyed by cur; 11 is out of order


@pytest.mark.parametrize("order, expected", [("", [10, 10]), ("DESC", [10, 12])])
def test_temporal_join_reads_a_deduplicated_view(order, expected):
    # first row: EUR 10 stays valid forever; last row: versions 10 (from 1 s) and 12 (from 3 s)
    setup = [f"CREATE VIEW rates AS {DEDUP.format(order)}"]
    sql = ("SELECT o.oid, r.rate FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r ON o.cur = r.cur")
    inputs = [_rate(1, "EUR", 10), _order(2, 1, "EUR"), _rate(3, "EUR", 12), _order(4, 2, "EUR")]
    assert [value["rate"] for _, value in run_sql(sql, RATES, inputs, setup=setup)] == expected


@pytest.mark.parametrize("sql, message", [
    ("SELECT cur FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY cur ORDER BY t) AS rn FROM history) WHERE rn <= 3",
     "deduplication only"),
    ("SELECT cur FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY cur ORDER BY rate) AS rn FROM history) WHERE rn = 1",
     "not one"),
    ("SELECT cur FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY t) AS rn FROM history) WHERE rn = 1", "PARTITION BY"),
])
def test_unsupported_rankings_are_rejected(sql, message):
    with pytest.raises(StreamJoinError) as error:
        run_sql(sql, RATES, [])
    assert error.value.rule == "row-number" and message in error.value.reason
