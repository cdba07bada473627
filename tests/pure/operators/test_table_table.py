"""Primary-key table-table join: ksqlDB's semantic table, conformance cases, residuals, and the
materialized result against a batch join of the final tables."""

from __future__ import annotations

import random

import pytest

from tests.pure.operators.conformance_inputs import case_records, column, conformance_case
from tests.pure.operators.conformance_tables import assert_keyed_output, run_keyed_case
from streamjoin.operators.base import Record, RowKind, Side
from streamjoin.operators.base import JoinType
from streamjoin.operators.table_table import TableTableJoin, TableTableJoinConfig

L, R = Side.LEFT, Side.RIGHT
JOIN_TYPES = [JoinType.INNER, JoinType.LEFT, JoinType.RIGHT, JoinType.FULL]

# ksqlDB "Semantics of Primary-Key Table-Table Joins", verbatim: one key, timestamp order.
# "tomb" = tombstone in, tombstone out; "A,-" = [A, null]; "-,b" = [null, b].
SEMANTIC_TABLE = """
 t | left | right | INNER | LEFT | RIGHT | OUTER
 1 | tomb |       |       |      |       |
 2 |      | tomb  |       |      |       |
 3 | A    |       |       | A,-  |       | A,-
 4 |      | a     | A,a   | A,a  | A,a   | A,a
 5 | B    |       | B,a   | B,a  | B,a   | B,a
 6 |      | b     | B,b   | B,b  | B,b   | B,b
 7 | tomb |       | tomb  | tomb | -,b   | -,b
 8 |      | tomb  |       |      | tomb  | tomb
 9 | C    |       |       | C,-  |       | C,-
10 |      | c     | C,c   | C,c  | C,c   | C,c
11 |      | tomb  | tomb  | C,-  | tomb  | C,-
12 | tomb |       |       | tomb |       | tomb
13 |      | tomb  |       |      |       |
14 |      | d     |       |      | -,d   | -,d
15 | D    |       | D,d   | D,d  | D,d   | D,d
"""


def parse_semantic_table() -> tuple[list[Record], dict[JoinType, list[tuple]]]:
    """Inputs as Records (ts in s -> ms) and, per join type, the expected (ts, value) rows."""
    lines = [line.split("|") for line in SEMANTIC_TABLE.strip().splitlines()[1:]]
    records, expected = [], {join_type: [] for join_type in JOIN_TYPES}
    for cells in lines:
        t, left, right, *outputs = (cell.strip() for cell in cells)
        side, value = (L, left) if left else (R, right)
        records.append(Record(side, "k", None if value == "tomb" else {"v": value}, int(t) * 1000))
        for join_type, out in zip(JOIN_TYPES, outputs):
            if out:
                row = None if out == "tomb" else tuple(None if v == "-" else v for v in out.split(","))
                expected[join_type].append((int(t) * 1000, row))
    return records, expected


@pytest.mark.parametrize("join_type", JOIN_TYPES, ids=lambda j: j.value)
def test_ksqldb_semantic_table(join_type):
    records, expected = parse_semantic_table()
    changes = TableTableJoin(TableTableJoinConfig(join_type)).process_all(records)
    got = [(c.ts, None if c.is_tombstone else (column(c.left, "v"), column(c.right, "v")))
           for c in changes]
    assert got == expected[join_type]
    # A value for a key without a result row is an INSERT, for one with a row an UPDATE_AFTER.
    exists = False
    for change in changes:
        want = RowKind.DELETE if change.is_tombstone else (
            RowKind.UPDATE_AFTER if exists else RowKind.INSERT)
        assert change.kind is want
        exists = not change.is_tombstone


def vs(left, right):
    return {"L": column(left, "v"), "R": column(right, "v")}


def amount_descr(left, right):
    return {"AMOUNT": column(left, "amount"), "DESCR": column(right, "descr")}


def name_item(left, right):
    return {"name": column(left, "name"), "item": column(right, "item")}


def select_star(left, right):  # both sides' value columns; the _key facet is the record key
    return {k: v for row in (left or {}, right or {}) for k, v in row.items() if k != "_key"}


KSQL = {"left_table": L, "right_table": R}
CTAS = {"orders_t": L, "info_t": R}
LENSES = {"customers": L, "orders": R}

CONFORMANCE = [
    ("ksqldb.table_table.pk.inner", JoinType.INNER, KSQL, vs),
    ("ksqldb.table_table.pk.left", JoinType.LEFT, KSQL, vs),
    ("ksqldb.table_table.pk.right", JoinType.RIGHT, KSQL, vs),
    ("ksqldb.table_table.pk.outer", JoinType.FULL, KSQL, vs),
    ("ksqldb.partitioning.ctas_key_name.inner_leftmost_is_left", JoinType.INNER, CTAS, amount_descr),
    ("ksqldb.partitioning.ctas_key_name.inner_leftmost_is_right", JoinType.INNER, CTAS, amount_descr),
    ("ksqldb.partitioning.ctas_key_name.left_join", JoinType.LEFT, CTAS, amount_descr),
    ("ksqldb.partitioning.ctas_key_name.full_outer", JoinType.FULL, CTAS, amount_descr),
    ("lenses.compat.table_table_inner", JoinType.INNER, LENSES, name_item),
    ("lenses.compat.table_table_left", JoinType.LEFT, LENSES, name_item),
    ("lenses.compat.table_table_right", JoinType.RIGHT, LENSES, name_item),
    ("lenses.compat.table_table_outer", JoinType.FULL, LENSES, name_item),
    ("lenses.on.default_key_join", JoinType.INNER, LENSES, select_star),
    ("lenses.on.explicit_key_join", JoinType.INNER, LENSES, select_star),
]


@pytest.mark.parametrize("case_id, join_type, sides, project", CONFORMANCE,
                         ids=[c[0] for c in CONFORMANCE])
def test_conformance(case_id, join_type, sides, project):
    run_keyed_case(case_id, TableTableJoin(TableTableJoinConfig(join_type)), sides, project)


def test_conformance_lenses_chained_three_way():
    # customerOrders = customers JOIN orders ON orders.customer_id = customers.id (both re-keyed
    # by the ON columns), re-keyed by order_id and joined with deliveryAddress by order_id.
    case = conformance_case("lenses.multi_source.with_chained_three_way")
    records = case_records(case, {"customers": L, "orders": R, "deliveryAddress": R},
                           {"customers": "id", "orders": "customer_id", "deliveryAddress": "order_id"})
    customer_orders = TableTableJoin(TableTableJoinConfig(JoinType.INNER))
    target = TableTableJoin(TableTableJoinConfig(JoinType.INNER))
    changes = []
    for item, record in zip(case["inputs"], records):
        if item["source"] == "deliveryAddress":
            changes += target.process(record)
            continue
        for change in customer_orders.process(record):
            assert not change.is_tombstone  # the data only inserts; a re-key would need the old key
            row = {"name": change.left["name"], "item": change.right["item"],
                   "order_id": change.right["_key"]}
            changes += target.process(Record(L, row["order_id"], row, change.ts))
    assert_keyed_output(case, changes,
                        lambda left, right: {**left, "address": column(right, "address")})


def test_residual_turns_a_key_match_into_a_null_padded_row():
    # LEFT JOIN ... ON l.k = r.k AND l.v > r.v
    #   L 5 @1 -> +I [5, null] ; R 7 @2 -> fails 5 > 7: +U [5, null] @2 ; R 3 @3 -> +U [5, 3] @3
    join = TableTableJoin(TableTableJoinConfig(JoinType.LEFT, residual=lambda l, r: l["v"] > r["v"]))
    changes = join.process_all([Record(L, "k", {"v": 5}, 1), Record(R, "k", {"v": 7}, 2),
                                Record(R, "k", {"v": 3}, 3)])
    assert [(c.kind, column(c.left, "v"), column(c.right, "v"), c.ts) for c in changes] == [
        (RowKind.INSERT, 5, None, 1), (RowKind.UPDATE_AFTER, 5, None, 2),
        (RowKind.UPDATE_AFTER, 5, 3, 3)]


def test_emit_retractions_flink_style():
    # INNER: A, a -> +I [A,a] ; B -> -U [A,a], +U [B,a] ; tombstone a -> -D [B,a] (with its rows)
    join = TableTableJoin(TableTableJoinConfig(JoinType.INNER, emit_retractions=True))
    changes = join.process_all([Record(L, "k", {"v": "A"}, 1), Record(R, "k", {"v": "a"}, 2),
                                Record(L, "k", {"v": "B"}, 3), Record(R, "k", None, 4)])
    assert [(c.kind.value, column(c.left, "v"), column(c.right, "v"), c.ts) for c in changes] == [
        ("+I", "A", "a", 2), ("-U", "A", "a", 3), ("+U", "B", "a", 3), ("-D", "B", "a", 4)]


@pytest.mark.parametrize("config", [
    dict(join_type=JoinType.FULL, residual=lambda l, r: True),
    dict(join_type=JoinType.CROSS),
], ids=["full_with_residual", "cross"])
def test_rejected_configurations(config):
    with pytest.raises(ValueError, match="join"):
        TableTableJoinConfig(**config)


def test_null_key_is_counted_and_ignored():
    join = TableTableJoin(TableTableJoinConfig(JoinType.FULL))
    assert join.process(Record(L, None, {"v": "A"}, 1)) == []
    assert join.metrics["null_key"] == 1


@pytest.mark.parametrize("join_type", JOIN_TYPES, ids=lambda j: j.value)
def test_materialized_result_equals_batch_join_of_final_tables(join_type):
    # 300 random upserts/tombstones over 6 keys; applying the changelog as upserts/tombstones
    # must give the batch join of the two final tables, with nothing deleted that did not exist.
    rng = random.Random(7)
    final, result = ({}, {}), {}
    join = TableTableJoin(TableTableJoinConfig(join_type))
    for ts in range(300):
        side, key = rng.choice([L, R]), rng.randrange(6)
        value = None if rng.random() < 0.3 else {"v": rng.randrange(100)}
        final[side].pop(key, None) if value is None else final[side].__setitem__(key, value)
        for change in join.process(Record(side, key, value, ts)):
            if change.is_tombstone:
                assert result.pop(change.key, None) is not None
            else:
                assert (change.kind is RowKind.INSERT) == (change.key not in result)
                result[change.key] = (change.left, change.right)
    batch = {}
    for key in set(final[L]) | set(final[R]):
        left, right = final[L].get(key), final[R].get(key)
        if (left and right) or (left and join_type.preserves(L)) or (right and join_type.preserves(R)):
            batch[key] = (left, right)
    assert result == batch
