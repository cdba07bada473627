"""Foreign-key table-table join: ksqlDB's 1:N semantic table, conformance cases, re-subscription on
foreign-key changes, and the materialized result against a batch join."""

from __future__ import annotations

import random
from collections import deque

import pytest

from tests.pure.operators.conformance_inputs import column
from tests.pure.operators.conformance_tables import run_keyed_case
from streamjoin.operators.base import Record, RowKind, Side
from streamjoin.operators.foreign_key import (
    ForeignKeyJoin,
    ForeignKeyJoinConfig,
    ForeignKeyLeftStage,
    ForeignKeyRightStage,
)
from streamjoin.operators.base import JoinType

L, R = Side.LEFT, Side.RIGHT


def by_fk(row):
    return row["fk"]


# ksqlDB "Semantics of Foreign-Key Table-Table Joins", verbatim. Left rows [PK,fk,v], right rows
# [pk,v]; "X:tomb" = tombstone for key X; outputs [PK,fk,v,pk,v] separated by ";".
SEMANTIC_TABLE = """
 t | left    | right   | INNER                  | LEFT
 1 | A:tomb  |         |                        |
 2 |         | a:tomb  |                        |
 3 | A,a,1   |         |                        | A,a,1,-,-
 4 |         | a,10    | A,a,1,a,10             | A,a,1,a,10
 5 |         | a,11    | A,a,1,a,11             | A,a,1,a,11
 6 | A,a,2   |         | A,a,2,a,11             | A,a,2,a,11
 7 | B,a,3   |         | B,a,3,a,11             | B,a,3,a,11
 8 |         | a,12    | A,a,2,a,12; B,a,3,a,12 | A,a,2,a,12; B,a,3,a,12
 9 |         | c,13    |                        |
10 | C,c,4   |         | C,c,4,c,13             | C,c,4,c,13
11 | C:tomb  |         | C:tomb                 | C:tomb
12 |         | c:tomb  |                        |
13 |         | a:tomb  | A:tomb; B:tomb         | A,a,2,-,-; B,a,3,-,-
14 | B:tomb  |         |                        | B:tomb
"""


def input_record(side: Side, cell: str, ts: int) -> Record:
    if cell.endswith(":tomb"):
        return Record(side, cell[:-5], None, ts)
    if side is L:
        pk, fk, v = cell.split(",")
        return Record(L, pk, {"id": pk, "fk": fk, "v": int(v)}, ts)
    pk, v = cell.split(",")
    return Record(R, pk, {"id": pk, "v": int(v)}, ts)


def output_row(cell: str) -> tuple:
    if cell.endswith(":tomb"):
        return (cell[:-5], None)
    pk, *fields = (None if f == "-" else f for f in cell.split(","))
    return (pk, tuple(int(f) if f and f.isdigit() else f for f in fields))


def semantic_table(join_type: JoinType) -> tuple[list[Record], list[tuple]]:
    records, expected = [], []
    column_index = 0 if join_type is JoinType.INNER else 1
    for line in SEMANTIC_TABLE.strip().splitlines()[1:]:
        t, left, right, *outputs = (cell.strip() for cell in line.split("|"))
        ts = int(t) * 1000
        records.append(input_record(L, left, ts) if left else input_record(R, right, ts))
        cell = outputs[column_index]
        expected += [(ts, *output_row(o.strip())) for o in cell.split(";") if cell]
    return records, expected


def described(change) -> tuple:
    if change.is_tombstone:
        return (change.ts, change.key, None)
    return (change.ts, change.key, (column(change.left, "fk"), column(change.left, "v"),
                                    column(change.right, "id"), column(change.right, "v")))


@pytest.mark.parametrize("join_type", [JoinType.INNER, JoinType.LEFT], ids=lambda j: j.value)
def test_ksqldb_semantic_table(join_type):
    records, expected = semantic_table(join_type)
    join = ForeignKeyJoin(ForeignKeyJoinConfig(by_fk, join_type))
    assert [described(c) for c in join.process_all(records)] == expected


@pytest.mark.parametrize("case_id, join_type", [
    ("ksqldb.table_table.fk.inner", JoinType.INNER), ("ksqldb.table_table.fk.left", JoinType.LEFT)])
def test_conformance(case_id, join_type):
    run_keyed_case(
        case_id, ForeignKeyJoin(ForeignKeyJoinConfig(by_fk, join_type)),
        {"left_table": L, "right_table": R},
        lambda l, r: {"L_FK": column(l, "fk"), "L_V": column(l, "v"),
                      "R_ID": column(r, "id"), "R_V": column(r, "v")})


def test_foreign_key_change_moves_the_subscription():
    #   R a=10 @1 ; R c=20 @2 ; L A->a @3 -> +I [A,a,10] ; L A->c @4 -> +U [A,c,20]
    #   R a=11 @5 -> nothing (A left a) ; R c=21 @6 -> +U [A,c,21]
    join = ForeignKeyJoin(ForeignKeyJoinConfig(by_fk))
    changes = join.process_all([
        Record(R, "a", {"id": "a", "v": 10}, 1), Record(R, "c", {"id": "c", "v": 20}, 2),
        Record(L, "A", {"fk": "a", "v": 0}, 3), Record(L, "A", {"fk": "c", "v": 0}, 4),
        Record(R, "a", {"id": "a", "v": 11}, 5), Record(R, "c", {"id": "c", "v": 21}, 6)])
    assert [(c.kind, c.key, column(c.right, "id"), column(c.right, "v"), c.ts) for c in changes] == [
        (RowKind.INSERT, "A", "a", 10, 3), (RowKind.UPDATE_AFTER, "A", "c", 20, 4),
        (RowKind.UPDATE_AFTER, "A", "c", 21, 6)]
    assert [(k, list(v)) for k, v in join.right_stage.subscriptions.items()] == [("c", ["A"])]


@pytest.mark.parametrize("join_type, expected", [
    (JoinType.INNER, []), (JoinType.LEFT, [(RowKind.INSERT, "A", None)])])
def test_null_foreign_key_references_nothing(join_type, expected):
    join = ForeignKeyJoin(ForeignKeyJoinConfig(by_fk, join_type))
    changes = join.process(Record(L, "A", {"fk": None, "v": 1}, 1))
    assert [(c.kind, c.key, c.right) for c in changes] == expected
    assert len(join.right_stage.subscriptions) == 0


def test_residual_and_retractions():
    # LEFT JOIN ON l.fk = r.id AND l.v < r.v, Flink-style retractions:
    #   R a=5 @1 ; L A (v 7) @2 -> +I [A, null] ; R a=9 @3 -> -U [A, null], +U [A, a=9]
    join = ForeignKeyJoin(ForeignKeyJoinConfig(
        by_fk, JoinType.LEFT, residual=lambda l, r: l["v"] < r["v"], emit_retractions=True))
    changes = join.process_all([Record(R, "a", {"v": 5}, 1), Record(L, "A", {"fk": "a", "v": 7}, 2),
                                Record(R, "a", {"v": 9}, 3)])
    assert [(c.kind.value, column(c.right, "v"), c.ts) for c in changes] == [
        ("+I", None, 2), ("-U", None, 3), ("+U", 9, 3)]


@pytest.mark.parametrize("join_type", [JoinType.RIGHT, JoinType.FULL, JoinType.CROSS])
def test_only_inner_and_left(join_type):
    with pytest.raises(ValueError, match="INNER, LEFT"):
        ForeignKeyJoinConfig(by_fk, join_type)


@pytest.mark.parametrize("join_type", [JoinType.INNER, JoinType.LEFT], ids=lambda j: j.value)
def test_materialized_result_equals_batch_join_of_final_tables(join_type):
    # 400 random changes: left rows (8 keys) pick a foreign key among 4 right keys or None.
    rng = random.Random(11)
    left, right, result = {}, {}, {}
    join = ForeignKeyJoin(ForeignKeyJoinConfig(by_fk, join_type))
    for ts in range(400):
        if rng.random() < 0.5:
            side, key, table = L, rng.randrange(8), left
            value = {"fk": rng.choice([None, 0, 1, 2, 3]), "v": ts}
        else:
            side, key, table = R, rng.randrange(4), right
            value = {"v": ts}
        value = None if rng.random() < 0.25 else value
        table.pop(key, None) if value is None else table.__setitem__(key, value)
        for change in join.process(Record(side, key, value, ts)):
            if change.is_tombstone:
                assert result.pop(change.key, None) is not None
            else:
                result[change.key] = (change.left, change.right)
    batch = {}
    for key, row in left.items():
        match = right.get(row["fk"])
        if match is not None or join_type is JoinType.LEFT:
            batch[key] = (row, match)
    assert result == batch


def test_stages_across_partitions_converge_to_the_batch_join():
    # Two left-key and two right-key partitions; each stage task reads its source topic and its
    # subscription / response topic in a random interleaving (no order across topics, FIFO within
    # one). Once every topic is drained, the materialized result is the batch join.
    rng = random.Random(13)
    config = ForeignKeyJoinConfig(by_fk, JoinType.LEFT)
    lefts = [ForeignKeyLeftStage(config) for _ in range(2)]
    rights = [ForeignKeyRightStage() for _ in range(2)]
    topics = {name: [deque(), deque()] for name in ("left", "right", "subscriptions", "responses")}
    left_table, right_table = {}, {}
    for ts in range(300):
        if rng.random() < 0.5:
            key, value = rng.randrange(6), {"fk": rng.choice([None, 0, 1, 2]), "v": ts}
            side, table, topic = L, left_table, "left"
        else:
            key, value = rng.randrange(3), {"v": ts}
            side, table, topic = R, right_table, "right"
        value = None if rng.random() < 0.2 else value
        table.pop(key, None) if value is None else table.__setitem__(key, value)
        topics[topic][key % 2].append(Record(side, key, value, ts))
    result = {}

    def apply(changes):
        for change in changes:
            if change.is_tombstone:
                assert result.pop(change.key, None) is not None
            else:
                result[change.key] = (change.left, change.right)

    while any(queue for queues in topics.values() for queue in queues):
        name, partition = rng.choice([(n, p) for n, queues in topics.items()
                                      for p, queue in enumerate(queues) if queue])
        message = topics[name][partition].popleft()
        if name == "left":
            changes, subscriptions = lefts[partition].on_left(message)
            apply(changes)
            for s in subscriptions:
                topics["subscriptions"][s.right_key % 2].append(s)
        elif name == "responses":
            apply(lefts[partition].on_response(message))
        else:
            stage = rights[partition]
            responses = stage.on_right(message) if name == "right" else stage.on_subscription(message)
            for r in responses:
                topics["responses"][r.left_key % 2].append(r)
    batch = {key: (row, right_table.get(row["fk"])) for key, row in left_table.items()}
    assert result == batch


# Kafka Streams' subscription instructions (tombstone_without_result): a left row that is deleted,
# or replaced by one that finds no right row, forwards a tombstone even when it had no result row;
# a brand-new left row that finds nothing (INNER) forwards nothing. The docs delete existing rows only.
KS_TOMBSTONES = [
    # R a @1, L A->a @2 (+I), R a tomb @3 (-D), L A tomb @4: the docs show nothing, Kafka Streams -D
    ([Record(R, "a", {"v": 1}, 1), Record(L, "A", {"fk": "a", "v": 0}, 2), Record(R, "a", None, 3),
      Record(L, "A", None, 4)],
     [(RowKind.INSERT, "A", 2), (RowKind.DELETE, "A", 3), (RowKind.DELETE, "A", 4)],
     [(RowKind.INSERT, "A", 2), (RowKind.DELETE, "A", 3)]),
    # L A->x @1 (no x: nothing), L A->y @2 (an update finding nothing: -D), L B->x @3 (new: nothing)
    ([Record(L, "A", {"fk": "x", "v": 0}, 1), Record(L, "A", {"fk": "y", "v": 0}, 2),
      Record(L, "B", {"fk": "x", "v": 0}, 3)],
     [(RowKind.DELETE, "A", 2)], []),
    # a tombstone for a left key never seen: nothing either way
    ([Record(L, "C", None, 1)], [], []),
]


@pytest.mark.parametrize("records, kafka_streams, docs", KS_TOMBSTONES)
def test_tombstones_without_a_result_row(records, kafka_streams, docs):
    for redundant, expected in ((True, kafka_streams), (False, docs)):
        join = ForeignKeyJoin(ForeignKeyJoinConfig(by_fk, JoinType.INNER, tombstone_without_result=redundant))
        assert [(c.kind, c.key, c.ts) for c in join.process_all(records)] == expected
