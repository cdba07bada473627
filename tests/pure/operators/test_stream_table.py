"""Stream-table joins (ksqlDB, Lenses re-emission, s-Server static snapshot)."""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field

import pytest

from tests.pure.operators.conformance_inputs import case_records, column, conformance_case, run_and_compare
from streamjoin.operators.base import Change, Record, Side
from streamjoin.operators.base import JoinType
from streamjoin.operators.stream_stream import StreamStreamJoin, StreamStreamJoinConfig
from streamjoin.operators.stream_table import StreamTableJoin, StreamTableJoinConfig

L, R = Side.LEFT, Side.RIGHT


def rec(side: Side, ts: int, v: str | None, key: str | None = "k") -> Record:
    return Record(side, key, None if v is None else {"v": v}, ts)


def rows(changes: list[Change]) -> list[tuple]:
    return [(column(c.left, "v"), column(c.right, "v"), c.ts) for c in changes]


@dataclass
class Case:
    name: str
    config: StreamTableJoinConfig
    inputs: list[Record]
    expected: list[tuple]
    metrics: dict = field(default_factory=dict)


LEFT = StreamTableJoinConfig(JoinType.LEFT)
LENSES_LEFT = StreamTableJoinConfig(JoinType.LEFT, reemit_on_late_table_row=True)

CASES = [
    # The ksqlDB doc's INNER column: only stream records trigger; a table update emits nothing.
    #   S A@3 (no row) ; T a@4 ; S B@5 -> [B,a] ; T b@6 ; T tombstone@8 ; S C@9 (deleted) ; T d@14 ; S D@15
    Case("ksqldb_doc_inner", StreamTableJoinConfig(),
         [rec(L, 1, None), rec(R, 2, None), rec(L, 3, "A"), rec(R, 4, "a"), rec(L, 5, "B"), rec(R, 6, "b"),
          rec(R, 8, None), rec(L, 9, "C"), rec(R, 14, "d"), rec(L, 15, "D")],
         [("B", "a", 5), ("D", "d", 15)], metrics={"null_value": 1}),
    # Lenses re-emission: C waits; a tombstone does not release it; c@10 does, ts = later input.
    Case("lenses_reemit_after_tombstone", LENSES_LEFT,
         [rec(L, 9, "C"), rec(R, 9, None), rec(R, 10, "c"), rec(R, 11, "c2")],
         [("C", None, 9), ("C", "c", 10)]),
    # The residual decides re-emission too: the first table row is rejected, the second accepted.
    Case("lenses_reemit_respects_residual",
         StreamTableJoinConfig(JoinType.LEFT, reemit_on_late_table_row=True, residual=lambda s, t: t["v"] != "bad"),
         [rec(L, 1, "A"), rec(R, 2, "bad"), rec(R, 3, "good"), rec(L, 4, "B")],
         [("A", None, 1), ("A", "good", 3), ("B", "good", 4)]),
    # s-Server static snapshot: the table is frozen at the first stream record.
    Case("static_snapshot", StreamTableJoinConfig(JoinType.LEFT, static_snapshot=True),
         [rec(R, 0, "a"), rec(L, 1, "A"), rec(R, 2, "a2"), rec(R, 3, None, key="k"), rec(L, 4, "B")],
         [("A", "a", 1), ("B", "a", 4)], metrics={"table_after_snapshot": 2}),
    # Lenses `table RIGHT JOIN stream`: the stream is the right input and the kept side.
    Case("table_right_join_stream", StreamTableJoinConfig(JoinType.RIGHT),
         [rec(L, 1, "t"), rec(R, 2, "s"), rec(R, 3, "x", key="other")],
         [("t", "s", 2), (None, "x", 3)]),
    Case("null_keys_counted", LEFT,
         [rec(L, 1, "A", key=None), rec(R, 2, "a", key=None)], [], metrics={"null_key": 2}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_stream_table_cases(case: Case) -> None:
    join = StreamTableJoin(case.config)
    assert rows(join.process_all(case.inputs)) == case.expected
    for what, n in case.metrics.items():
        assert join.metrics[what] == n


@pytest.mark.parametrize("join_type, stream_side", [(JoinType.FULL, L), (JoinType.FULL, None), (JoinType.RIGHT, L),
                                                    (JoinType.LEFT, R)])
def test_table_side_cannot_be_kept(join_type: JoinType, stream_side: Side) -> None:
    with pytest.raises(ValueError, match="keeps only the stream side"):
        StreamTableJoinConfig(join_type, stream_side=stream_side)


@pytest.mark.parametrize("case_id, join_type", [
    ("ksqldb.stream_table.inner", JoinType.INNER),
    ("ksqldb.stream_table.left", JoinType.LEFT),
])
def test_ksqldb_conformance(case_id: str, join_type: JoinType) -> None:
    run_and_compare(case_id, StreamTableJoin(StreamTableJoinConfig(join_type)),
                    {"left_stream": L, "right_table": R}, lambda s, t: {"L": column(s, "v"), "R": column(t, "v")})


def test_ksqldb_pageviews_enriched() -> None:
    run_and_compare("ksqldb.example.pageviews_enriched", StreamTableJoin(StreamTableJoinConfig(JoinType.LEFT)),
                    {"pageviews": L, "users": R},
                    lambda p, u: {"PAGEID": column(p, "pageid"), "REGIONID": column(u, "regionid"),
                                  "GENDER": column(u, "gender")},
                    {"pageviews": "userid"})



@pytest.mark.parametrize("case_id, join_type", [
    ("lenses.stream_table.left_reemits_on_late_table_record", JoinType.LEFT),
    ("lenses.stream_table.inner_no_reemission", JoinType.INNER),
    ("lenses.stream_table.materialization_order_inner", JoinType.INNER),
    ("lenses.stream_table.materialization_order_left", JoinType.LEFT),
    ("lenses.join_types.inner", JoinType.INNER),
    ("lenses.join_types.left", JoinType.LEFT),
])
def test_lenses_conformance(case_id: str, join_type: JoinType) -> None:
    join = StreamTableJoin(StreamTableJoinConfig(join_type, reemit_on_late_table_row=True))
    run_and_compare(case_id, join, {"orders": L, "customers": R},
                    lambda o, c: {"name": column(c, "name"), "item": column(o, "item")},
                    {"orders": "customer_id", "customers": "id"})


def test_lenses_table_right_join_stream() -> None:
    join = StreamTableJoin(StreamTableJoinConfig(JoinType.RIGHT, stream_side=R, reemit_on_late_table_row=True))
    run_and_compare("lenses.join_types.right", join, {"customers": L, "orders": R},
                    lambda c, o: {"name": column(c, "name"), "item": column(o, "item")},
                    {"orders": "customer_id", "customers": "id"})


EVENT_COLUMNS = ["animal_id", "row_id", "sensor", "zone", "weight"]
ANIMAL_COLUMNS = ["edible", "poisonous", "name", "species", "genus"]


def select_star_using(event, animal) -> dict:
    return {**{c: column(event, c) for c in EVENT_COLUMNS}, **{c: column(animal, c) for c in ANIMAL_COLUMNS}}


@pytest.mark.parametrize("case_id, join_type", [
    ("sqlstream.stream_table.inner_using", JoinType.INNER),
    ("sqlstream.stream_table.left_using", JoinType.LEFT),
    ("sqlstream.stream_table.snapshot_not_refreshed", JoinType.LEFT),
])
def test_sqlstream_static_conformance(case_id: str, join_type: JoinType) -> None:
    run_and_compare(case_id, StreamTableJoin(StreamTableJoinConfig(join_type, static_snapshot=True)),
                    {"beast_events": L, "animal_data": R}, select_star_using, {"beast_events": "animal_id"})


def test_sqlstream_equi_join_extra_filters() -> None:
    """ON (e.animal_id = a.animal_id AND a.edible AND NOT a.poisonous): the non-key part is the
    residual."""
    config = StreamTableJoinConfig(static_snapshot=True, residual=lambda e, a: a["edible"] and not a["poisonous"])
    run_and_compare("sqlstream.stream_table.equi_join_extra_filters", StreamTableJoin(config),
                    {"beast_events": L, "animal_data": R},
                    lambda e, a: {"ROW_ID": e["row_id"], "ANIMAL_ID": e["animal_id"], "NAME": column(a, "name")},
                    {"beast_events": "animal_id"})


def test_ksqldb_nway_stream_table_then_stream_within() -> None:
    """A JOIN B (stream-table, ts = A's ts), then JOIN C WITHIN 10 SECONDS (stream-stream)."""
    case = conformance_case("ksqldb.nway.stream_table_stream_within")
    a_join_b = StreamTableJoin(StreamTableJoinConfig())
    ab_join_c = StreamStreamJoin(StreamStreamJoinConfig.within(10_000))
    out: list[Change] = []
    for record in case_records(case, {"A": L, "B": R, "C": R}):
        if "qty" in (record.value or {}):
            out += ab_join_c.process(record)
            continue
        for c in a_join_b.process(record):
            out += ab_join_c.process(Record(L, c.key, {"A": c.left, "B": c.right}, c.ts, record.seq))
    got = [(c.left["A"]["action"], c.left["B"]["name"], c.right["qty"], c.ts) for c in out]
    want = [(e["value"]["A_ACTION"], e["value"]["B_NAME"], e["value"]["C_QTY"], e["ts"]) for e in case["expected"]]
    assert sorted(got) == sorted(want)


def test_resumes_after_pickle() -> None:
    """The Spark adapter checkpoints a task's processors by pickling them."""
    before = [rec(R, 1, "a"), rec(L, 2, "A"), rec(L, 3, "B", key="j")]
    after = [rec(R, 4, "b", key="j"), rec(L, 5, "C")]
    whole, resumed = StreamTableJoin(LENSES_LEFT), StreamTableJoin(LENSES_LEFT)
    whole.process_all(before)
    resumed.process_all(before)
    resumed = pickle.loads(pickle.dumps(resumed))
    expected = whole.process_all(after)
    assert expected and resumed.process_all(after) == expected
