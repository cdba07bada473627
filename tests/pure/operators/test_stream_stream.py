"""Windowed stream-stream joins (ksqlDB, Lenses) and the Flink interval join."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import pytest

from tests.pure.operators.conformance_inputs import case_records, column, conformance_case, run_and_compare
from streamjoin.operators.base import END_OF_TIME, Change, Record, Side
from streamjoin.operators.interval import IntervalJoin, IntervalJoinConfig
from streamjoin.operators.base import JoinType
from streamjoin.operators.stream_stream import StreamStreamJoin, StreamStreamJoinConfig

L, R = Side.LEFT, Side.RIGHT
SECOND = 1000


def rec(side: Side, ts_s: float, v: str | None, key: str | None = "k") -> Record:
    return Record(side, key, None if v is None else {"v": v}, int(ts_s * SECOND))


def pairs(changes: list[Change]) -> list[tuple]:
    """[L, R]@ts rows as (left v, right v, ts in s)."""
    return [(column(c.left, "v"), column(c.right, "v"), c.ts / SECOND) for c in changes]


@dataclass
class Case:
    name: str
    config: StreamStreamJoinConfig
    inputs: list[Record]
    expected: list[tuple]
    end_of_input: bool = False
    metrics: dict = field(default_factory=dict)


W15_G5 = dict(before=15 * SECOND, after=15 * SECOND, grace=5 * SECOND)

CASES = [
    # Eager outer rows (no GRACE PERIOD, legacy ksqlDB): A has no match when it arrives -> [A,null]
    # at once; a later match is a second row.
    #   L A@1 -> [A,null]@1 ; R a@2 -> [A,a]@2 ; R b@30 (outside 15 s) -> nothing (LEFT)
    Case("eager_left", StreamStreamJoinConfig.within(15 * SECOND, join_type=JoinType.LEFT, eager_outer=True),
         [rec(L, 1, "A"), rec(R, 2, "a"), rec(R, 30, "b")],
         [("A", None, 1), ("A", "a", 2)]),
    # Eager FULL: an unmatched right row is emitted at once too.
    Case("eager_full", StreamStreamJoinConfig.within(15 * SECOND, join_type=JoinType.FULL, eager_outer=True),
         [rec(R, 1, "a"), rec(L, 40, "A")],
         [(None, "a", 1), ("A", None, 40)]),
    # WITHIN (before 2 s, after 5 s): r.ts in [l.ts - 2, l.ts + 5].
    #   L A@10 ; R a@7 (3 s before: no) ; R b@8 (2 s before: yes) ; R c@15 (5 s after: yes) ; R d@16 (no)
    Case("asymmetric_window", StreamStreamJoinConfig(before=2 * SECOND, after=5 * SECOND, grace=60 * SECOND),
         [rec(L, 10, "A"), rec(R, 7, "a"), rec(R, 8, "b"), rec(R, 15, "c"), rec(R, 16, "d")],
         [("A", "b", 10), ("A", "c", 15)]),
    # Lateness boundary: q@40 at stream time 60 is exactly 40+15+5 = 60, not late -> joins B@45.
    Case("late_boundary_inclusive", StreamStreamJoinConfig(**W15_G5),
         [rec(L, 45, "B"), rec(R, 60, "p"), rec(R, 40, "q"), rec(R, 39.999, "x")],
         [("B", "p", 60), ("B", "q", 45)], metrics={"late": 1}),
    # With grace, an outer row waits for window + grace; end of input flushes the rest.
    #   L A@0 (closes at 20) ; R z@19 (19 s from A: no match) ; R y@20 -> [A,null]@0 ; end -> [G..]
    Case("close_then_flush", StreamStreamJoinConfig(**W15_G5, join_type=JoinType.FULL),
         [rec(L, 0, "A"), rec(R, 19, "z"), rec(R, 20, "y")],
         [("A", None, 0), (None, "z", 19), (None, "y", 20)], end_of_input=True),
    # Null keys and null values never join and do not move stream time; they are counted.
    Case("nulls_ignored", StreamStreamJoinConfig(**W15_G5, join_type=JoinType.LEFT),
         [rec(L, 1, "A"), rec(R, 100, "a", key=None), rec(R, 200, None), rec(R, 2, "b")],
         [("A", "b", 2)], metrics={"null_key": 1, "null_value": 1}),
    # Residual: the pair must also satisfy a non-equi condition; a rejected pair is no match.
    Case("residual_rejects_pair", StreamStreamJoinConfig(**W15_G5, join_type=JoinType.LEFT,
                                                         residual=lambda l, r: l["v"] < r["v"]),
         [rec(L, 1, "m"), rec(R, 2, "a"), rec(R, 3, "z")],
         [("m", "z", 3)], end_of_input=True),
]


MINUTE = 60
KS = {"store_retention": True}  # late records as Kafka Streams treats them (option window_store_retention)
W15_G5_KS = {**W15_G5, **KS}  # each side's store keeps 15 + 15 + 5 = 35 s by its own store time

STORE_RETENTION_CASES = [
    # ksqlDB's QTT "left join with out of order and custom grace period": WITHIN 1 min GRACE 1 min,
    # retention 3 min (in s below), keys k0..k3.
    #   L A@0 k0 ; R a@60 k0 -> [A,a]@60 ; L B@330 k1 (stream time and left store time 330, waits)
    #   L C@90 k2: 90 < 330 - 180, not kept; no match and 90 + 60 < 330 -> [C,null]@90 at once
    #   R c@90 k2: kept in the right store (its time 90); C is in no store
    #   L D@60 k3 -> [D,null]@60 as C ; R d@60 k3: kept, D is in no store
    Case("ks_left_out_of_order", StreamStreamJoinConfig.within(MINUTE * SECOND, grace=MINUTE * SECOND,
                                                               join_type=JoinType.LEFT, **KS),
         [rec(L, 0, "A", "k0"), rec(R, 60, "a", "k0"), rec(L, 330, "B", "k1"), rec(L, 90, "C", "k2"),
          rec(R, 90, "c", "k2"), rec(L, 60, "D", "k3"), rec(R, 60, "d", "k3")],
         [("A", "a", 60), ("C", None, 90), ("D", None, 60)], metrics={"late": 2}),
    # The RIGHT JOIN of the same QTT file: a late left record still joins what the right store holds.
    #   ... R c@90 k2 -> [null,c]@90 at once (window ended: 90 + 60 < 330)
    #   R d@60 k3 -> [null,d]@60 ; L D@90 k3: not kept, probes the right store: d@60 -> [D,d]@90
    Case("ks_right_late_left_joins", StreamStreamJoinConfig.within(MINUTE * SECOND, grace=MINUTE * SECOND,
                                                                   join_type=JoinType.RIGHT, **KS),
         [rec(L, 0, "A", "k0"), rec(R, 60, "a", "k0"), rec(L, 330, "B", "k1"), rec(L, 90, "C", "k2"),
          rec(R, 90, "c", "k2"), rec(R, 60, "d", "k3"), rec(L, 90, "D", "k3")],
         [("A", "a", 60), (None, "c", 90), (None, "d", 60), ("D", "d", 90)], metrics={"late": 2}),
    # Store time is per side: the right side is behind, so its old records are kept and joined.
    #   L A@100 (left store 100) ; R a@50: right store 50, kept (documented model: late, dropped)
    #   L B@60: 60 < 100 - 35, not kept, probes the right store: a@50 -> [B,a]@60
    #   L C@65: 65 >= 65, kept -> [C,a]@65 ; R b@64: probes the left store: C@65 -> [C,b]@65 (B: no)
    Case("ks_store_time_per_side", StreamStreamJoinConfig(**W15_G5_KS),
         [rec(L, 100, "A"), rec(R, 50, "a"), rec(L, 60, "B"), rec(L, 65, "C"), rec(R, 64, "b")],
         [("B", "a", 60), ("C", "a", 65), ("C", "b", 65)], metrics={"late": 1}),
    # A kept outer record whose window already ended is padded at once and still joins later.
    #   R z@100 key o ; L A@70: left store 70, kept; no match, 70 + 15 < 100 -> [A,null]@70
    #   R a@75: right store 100, 75 >= 65 kept, probes the left store: A@70 -> [A,a]@75
    Case("ks_ended_window_padded_at_once", StreamStreamJoinConfig(**W15_G5_KS, join_type=JoinType.LEFT),
         [rec(R, 100, "z", "o"), rec(L, 70, "A"), rec(R, 75, "a")],
         [("A", None, 70), ("A", "a", 75)]),
    # A record whose window has not ended waits for its close (window end + grace, inclusive).
    #   L A@90 (closes at 90 + 15 + 5 = 110) ; R z@100 key o ; R y@110 key o -> [A,null]@90
    Case("ks_open_window_waits", StreamStreamJoinConfig(**W15_G5_KS, join_type=JoinType.LEFT),
         [rec(L, 90, "A"), rec(R, 100, "z", "o"), rec(R, 110, "y", "o")],
         [("A", None, 90)]),
    # A store forgets by its own time: L A@0 ; L B@40 (left store 40: A@0 < 5 forgotten)
    #   R a@10: kept (right store 10), probes the left store [-5, 25]: A is gone -> nothing
    Case("ks_store_forgets", StreamStreamJoinConfig(**W15_G5_KS),
         [rec(L, 0, "A"), rec(L, 40, "B"), rec(R, 10, "a")], []),
]


@pytest.mark.parametrize("case", CASES + STORE_RETENTION_CASES, ids=lambda c: c.name)
def test_stream_stream_cases(case: Case) -> None:
    join = StreamStreamJoin(case.config)
    out = join.process_all(case.inputs)
    if case.end_of_input:
        out += join.advance_to(END_OF_TIME)
    assert pairs(out) == case.expected
    for what, n in case.metrics.items():
        assert join.metrics[what] == n


def test_state_expires_after_window_and_grace() -> None:
    join = StreamStreamJoin(StreamStreamJoinConfig(**W15_G5))
    join.process_all([rec(L, 0, "A"), rec(R, 1, "a")])
    assert len(join.stores[L]) == len(join.stores[R]) == 1
    join.advance_to(36 * SECOND)  # A@0: 0 + 15 + 15 + 5 < 36, no non-late record can reach it
    assert len(join.stores[L]) == 0 and len(join.stores[R]) == 1
    join.advance_to(37 * SECOND)
    assert len(join.stores[L]) == len(join.stores[R]) == 0


def test_a_side_store_forgets_by_its_own_store_time() -> None:
    join = StreamStreamJoin(StreamStreamJoinConfig(**W15_G5_KS))
    join.process_all([rec(L, 0, "A"), rec(R, 100, "z", "o")])  # stream time 100, left store time 0
    assert len(join.stores[L]) == 1, "the left store keeps A: its own time has not moved"
    join.process_all([rec(L, 36, "B", "o")])  # left store time 36: A@0 < 36 - 35
    assert [e[2]["v"] for _, entries in join.stores[L].items() for e in entries] == ["B"]


def test_legacy_grace_is_a_day_minus_the_window() -> None:
    assert StreamStreamJoinConfig.within(3600 * SECOND).effective_grace == 22 * 3600 * SECOND
    assert StreamStreamJoinConfig.within(3600 * SECOND, grace=0).effective_grace == 0


def test_negative_window_rejected() -> None:
    with pytest.raises(ValueError, match="must not be negative"):
        StreamStreamJoinConfig(before=-1, after=5)


KSQL_SIDES = {"left_stream": L, "right_stream": R}


def ksql_projection(left, right) -> dict:
    return {"L": column(left, "v"), "R": column(right, "v")}


@pytest.mark.parametrize("case_id, join_type", [
    ("ksqldb.stream_stream.inner", JoinType.INNER),
    ("ksqldb.stream_stream.left", JoinType.LEFT),
    ("ksqldb.stream_stream.right", JoinType.RIGHT),
    ("ksqldb.stream_stream.outer", JoinType.FULL),
    ("ksqldb.stream_stream.out_of_order_within_grace", JoinType.INNER),
    ("ksqldb.stream_stream.late_record_discarded", JoinType.INNER),
])
def test_ksqldb_conformance(case_id: str, join_type: JoinType) -> None:
    join = StreamStreamJoin(StreamStreamJoinConfig(**W15_G5, join_type=join_type))
    run_and_compare(case_id, join, KSQL_SIDES, ksql_projection)
    if case_id.endswith("late_record_discarded"):
        assert join.metrics["late"] == 1


LENSES_SIDES = {"orders": L, "customers": R}
LENSES_KEYS = {"orders": "customer_id", "customers": "id"}


@pytest.mark.parametrize("case_id, join_type", [
    ("lenses.within.left_join_5s", JoinType.LEFT),
    ("lenses.compat.stream_stream_inner_within", JoinType.INNER),
    ("lenses.join_types.outer", JoinType.FULL),
])
def test_lenses_conformance(case_id: str, join_type: JoinType) -> None:
    window = int(conformance_case(case_id)["settings"]["window"].rstrip("s")) * SECOND
    join = StreamStreamJoin(StreamStreamJoinConfig.within(window, join_type=join_type))  # Lenses: at close
    run_and_compare(case_id, join, LENSES_SIDES,
                    lambda o, c: {"name": column(c, "name"), "item": column(o, "item")}, LENSES_KEYS)


def test_ksqldb_shipped_orders_chained() -> None:
    """orders JOIN payments WITHIN 1 h, then (o ⋈ p) JOIN shipments WITHIN 2 h: the first join's
    output rows (ts = later input) are the second join's left input."""
    hour = 3600 * SECOND
    first = StreamStreamJoin(StreamStreamJoinConfig.within(hour))
    second = StreamStreamJoin(StreamStreamJoinConfig.within(2 * hour))
    sides = {"orders": L, "payments": R, "shipments": R}
    out: list[Change] = []
    for record in case_records(conformance_case("ksqldb.example.shipped_orders"), sides):
        if record.side is L or record.value.keys() >= {"amount"}:
            for c in first.process(record):
                out += second.process(Record(L, c.key, {"o": c.left, "p": c.right}, c.ts, record.seq))
        else:
            out += second.process(record)
    projected = [(c.key, c.left["o"]["itemid"], c.right["id"], c.left["p"]["id"], c.ts) for c in out]
    assert projected == [(1, "item-1", 1, 1, 5_400_000)]


def test_flink_interval_between_4h() -> None:
    hour = 3600 * SECOND
    join = IntervalJoin(IntervalJoinConfig(lower=-4 * hour, upper=0))
    run_and_compare("flink.interval.between_4h", join, {"Orders": L, "Shipments": R},
                    lambda o, s: {**(o or {}), **(s or {})}, {"Orders": "id", "Shipments": "orderId"})


@pytest.mark.parametrize("inputs, expected", [
    # Orders LEFT JOIN Shipments, o.t BETWEEN s.t - 4h AND s.t (hours). Watermark = min of inputs.
    #   L o1@10 ; R s1@13 -> [o1,s1] ; L o2@15 (watermark min(15,13)=13) ; R s9@20 (wm 15)
    #   end -> [o2,null]@15 (o2's window [15,19] had no o2 shipment)
    ([(L, 10, "o1", 1), (R, 13, "s1", 1), (L, 15, "o2", 2), (R, 20, "s9", 9)],
     [("o1", "s1", 13), ("o2", None, 15)]),
    # A left row behind the watermark still probes, is not stored, and is padded at once.
    #   R s1@13 ; L o9@20 ; R s2@14 (wm 14) ; L o1@9 (window [9,13] passed, s1 still stored):
    #   joins s1 ; L o5@5 (window [5,9]) -> [o5,null] at once ; end -> [o9,null]
    ([(R, 13, "s1", 1), (L, 20, "o9", 9), (R, 14, "s2", 2), (L, 9, "o1", 1), (L, 5, "o5", 5)],
     [("o1", "s1", 13), ("o5", None, 5), ("o9", None, 20)]),
])
def test_flink_interval_left_outer(inputs, expected) -> None:
    hour = 3600 * SECOND
    join = IntervalJoin(IntervalJoinConfig(lower=-4 * hour, upper=0, join_type=JoinType.LEFT))
    records = [Record(side, key, {"v": v}, ts * hour) for side, ts, v, key in inputs]
    out = join.process_all(records) + join.advance_to(END_OF_TIME)
    assert [(column(c.left, "v"), column(c.right, "v"), c.ts // hour) for c in out] == expected


@pytest.mark.parametrize("make", [
    lambda: StreamStreamJoin(StreamStreamJoinConfig(**W15_G5, join_type=JoinType.FULL)),
    lambda: StreamStreamJoin(StreamStreamJoinConfig(**W15_G5_KS, join_type=JoinType.FULL)),
    lambda: IntervalJoin(IntervalJoinConfig(lower=-5 * SECOND, upper=5 * SECOND, join_type=JoinType.FULL)),
], ids=["ksqldb", "ksqldb_store_retention", "flink"])
def test_resumes_after_pickle(make) -> None:
    """The Spark adapter checkpoints a task's processors by pickling them."""
    before, after = [rec(L, 1, "A"), rec(R, 3, "a"), rec(L, 9, "B")], [rec(R, 10, "b"), rec(R, 40, "c")]
    whole = make()
    resumed = make()
    resumed.process_all(before)
    resumed = pickle.loads(pickle.dumps(resumed))
    whole.process_all(before)
    expected = whole.process_all(after) + whole.advance_to(END_OF_TIME)
    assert expected and resumed.process_all(after) + resumed.advance_to(END_OF_TIME) == expected


@pytest.mark.parametrize("join_type, expected", [
    # `l.t BETWEEN r.t + 3 s AND r.t + 1 s` is empty: nothing joins, every preserved row is padded
    # once the watermark passes its (empty) window. L A@1 ; R a@2 ; L B@4 ; end of input.
    (JoinType.INNER, []),
    (JoinType.LEFT, [("A", None, 1), ("B", None, 4)]),
    (JoinType.RIGHT, [(None, "a", 2)]),
    (JoinType.FULL, [("A", None, 1), (None, "a", 2), ("B", None, 4)]),
])
def test_flink_interval_empty_interval_pads_every_row(join_type, expected) -> None:
    join = IntervalJoin(IntervalJoinConfig(lower=3 * SECOND, upper=1 * SECOND, join_type=join_type))
    out = join.process_all([rec(L, 1, "A"), rec(R, 2, "a"), rec(L, 4, "B")]) + join.advance_to(END_OF_TIME)
    assert sorted(pairs(out), key=lambda p: p[2]) == expected
