"""ASOF join (beyond the seeds): the four match conditions, watermark-driven emission, and the
streaming result against a batch ASOF join on disordered input."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.pure.operators.conformance_inputs import column
from streamjoin.operators.asof import AsofCondition, AsofJoin, AsofJoinConfig
from streamjoin.operators.base import END_OF_TIME, Record, Side
from streamjoin.operators.base import JoinType

L, R = Side.LEFT, Side.RIGHT
GE, GT, LE, LT = AsofCondition.GE, AsofCondition.GT, AsofCondition.LE, AsofCondition.LT


def quote(ts, name, key="k"):
    return Record(R, key, {"q": name}, ts)


def trade(ts, name, key="k"):
    return Record(L, key, {"t": name}, ts)


# Quotes of k at 10, 20, 30 (all first); trades at 5, 20, 25, 35 in time order.
QUOTES = [quote(10, "q10"), quote(20, "q20"), quote(30, "q30")]
TRADES = [trade(5, "t5"), trade(20, "t20"), trade(25, "t25"), trade(35, "t35")]


@pytest.mark.parametrize("condition, join_type, expected", [
    #            t5      t20     t25     t35
    (GE, JoinType.LEFT, [None, "q20", "q20", "q30"]),  # latest quote at or before
    (GT, JoinType.LEFT, [None, "q10", "q20", "q30"]),  # latest strictly before
    (LE, JoinType.LEFT, ["q10", "q20", "q30", None]),  # earliest at or after
    (LT, JoinType.LEFT, ["q10", "q30", "q30", None]),  # earliest strictly after
    (GE, JoinType.INNER, ["q20", "q20", "q30"]),  # t5 has no match and is dropped
], ids=["ge", "gt", "le", "lt", "ge_inner"])
def test_match_conditions(condition, join_type, expected):
    join = AsofJoin(AsofJoinConfig(join_type, condition))
    changes = join.process_all(QUOTES + TRADES) + join.advance_to(END_OF_TIME)
    assert [column(c.right, "q") for c in changes] == expected
    assert all(c.ts == int(c.left["t"][1:]) for c in changes)  # output ts = the left row's


def described(changes):
    return [(column(c.left, "t"), column(c.right, "q"), c.ts) for c in changes]


@pytest.mark.parametrize("condition, inputs, expected", [
    # Looking back (>=): the docstring timeline.
    #   R r1@10 ; L L1@15 (W 10) ; L L2@12 ; R r2@14 (W 14: L2 -> r1) ; R r3@20 (W 15) ; end: L1 -> r2
    (GE, [quote(10, "r1"), trade(15, "L1"), trade(12, "L2"), quote(14, "r2"), quote(20, "r3"), "end"],
     [[], [], [], [("L2", "r1", 12)], [], [("L1", "r2", 15)]]),
    # Looking forward (<=): a left row waits until its closest later right row is behind W.
    #   L a@5 ; R q8@8 (W 5: q8 not final) ; L b@20 (W 8: 8 !< 8) ; R q15@15 (W 15: a -> q8;
    #   b has no candidate yet) ; end: b has none (LEFT: null)
    (LE, [trade(5, "a"), quote(8, "q8"), trade(20, "b"), quote(15, "q15"), "end"],
     [[], [], [], [("a", "q8", 5)], [("b", None, 20)]]),
    # Same time: the last arrived right row wins, both ways.
    (GE, [quote(10, "first"), quote(10, "second"), trade(10, "t"), "end"],
     [[], [], [], [("t", "second", 10)]]),
    (LE, [quote(10, "first"), quote(10, "second"), trade(10, "t"), "end"],
     [[], [], [], [("t", "second", 10)]]),
], ids=["back_timeline", "forward_waits", "tie_back", "tie_forward"])
def test_emission_timelines(condition, inputs, expected):
    join = AsofJoin(AsofJoinConfig(JoinType.LEFT, condition))
    steps = [join.advance_to(END_OF_TIME) if item == "end" else join.process(item) for item in inputs]
    assert [described(step) for step in steps] == expected


def test_late_left_row_is_counted_and_dropped():
    join = AsofJoin(AsofJoinConfig(JoinType.LEFT))
    join.process_all([quote(50, "q"), trade(60, "a"), trade(40, "late")])
    assert described(join.advance_to(END_OF_TIME)) == [("a", "q", 60)]
    assert join.metrics["late"] == 1


def test_null_right_value_is_counted_not_a_deletion():
    join = AsofJoin(AsofJoinConfig(JoinType.LEFT))
    join.process_all([quote(1, "q"), Record(R, "k", None, 2), trade(3, "t")])
    assert described(join.advance_to(END_OF_TIME)) == [("t", "q", 3)]
    assert join.metrics["null_value"] == 1


def batch_asof(lefts, rights, condition):
    """Reference: each left row's match over the whole input (ties: the last right row wins)."""
    out = Counter()
    for l_key, l_ts, l_id in lefts:
        candidates = [(ts, arrival, r_id) for arrival, (key, ts, r_id) in enumerate(rights)
                      if key == l_key and {GE: l_ts >= ts, GT: l_ts > ts, LE: l_ts <= ts,
                                           LT: l_ts < ts}[condition]]
        if condition.looks_back:
            best = max(candidates, default=None)
        else:
            closest = min((ts for ts, _, _ in candidates), default=None)
            best = max((c for c in candidates if c[0] == closest), default=None)
        out[(l_id, best[2] if best else None)] += 1
    return out


@pytest.mark.parametrize("condition", [GE, GT, LE, LT], ids=lambda c: c.name)
def test_streaming_equals_batch_on_disordered_input(condition):
    # 400 rows over 3 keys, each side out of order by up to its watermark delay (20 / 5 ms):
    # nothing is late, so the streaming result must be exactly the batch ASOF join.
    rng = random.Random(5)
    delays = {L: 20, R: 5}
    records, lefts, rights = [], [], []
    for base in range(0, 4000, 10):
        side = rng.choice([L, R])
        key, ts = rng.randrange(3), base - rng.randrange(delays[side] + 1)
        ident = f"{side.name[0]}{base}"
        records.append(Record(side, key, {"id": ident}, ts))
        (lefts if side is L else rights).append((key, ts, ident))
    join = AsofJoin(AsofJoinConfig(JoinType.LEFT, condition, delays[L], delays[R]))
    changes = join.process_all(records) + join.advance_to(END_OF_TIME)
    assert join.metrics["late"] == 0
    assert Counter((c.left["id"], column(c.right, "id")) for c in changes) == \
        batch_asof(lefts, rights, condition)
