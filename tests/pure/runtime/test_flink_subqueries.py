"""Flink `IN` / `EXISTS` subqueries as semi and anti joins, end to end in-process; NOT IN is
null-aware (SQL three-valued logic)."""

from __future__ import annotations

import pytest

from streamjoin.dialect import StreamJoinError
from streamjoin.plan import nodes as n
from streamjoin.plan import plan_program
from streamjoin.kafka.records import place
from streamjoin.runner.cases import Case, InputRecord
from streamjoin.runner.planned import case_catalog, plan_case
from streamjoin.runtime.contract import Emitted, InputRow, Rejected
from tests.pure.runtime.sql_case import row, run_sql, source, values

AB = [source("A", {"a1": "INT", "a2": "BIGINT"}), source("B", {"b1": "INT", "b2": "BIGINT"})]
# B first (so no left row is emitted and then retracted), then A:
#   B (1,1) (2,5) (NULL,9)      A (1,1) (2,2) (3,3) (NULL,4)
B_ROWS = [row("B", 1, {"b1": 1, "b2": 1}), row("B", 2, {"b1": 2, "b2": 5}), row("B", 3, {"b1": None, "b2": 9})]
A_ROWS = [row("A", 4 + i, {"a1": a1, "a2": a2}) for i, (a1, a2) in enumerate([(1, 1), (2, 2), (3, 3), (None, 4)])]


@pytest.mark.parametrize("where, expected_a1", [
    # correlated IN with a non-equi correlation: b1 = a1 and a2 < b2 -> only (2,2) (b2 5 > 2)
    ("a1 IN (SELECT b1 FROM B WHERE a2 < b2)", [2]),
    ("EXISTS (SELECT * FROM B WHERE a1 = b1)", [1, 2]),
    # NOT EXISTS: a NULL a1 equals nothing, so it has no match
    ("NOT EXISTS (SELECT b1 FROM B WHERE a1 = b1 AND a2 < b2)", [1, 3, None]),
    # NOT IN over a set holding NULL is never true
    ("a1 NOT IN (SELECT b1 FROM B)", []),
    # ... without the NULL: 3 is not in {1, 2}; a NULL a1 is not in a non-empty set either
    ("a1 NOT IN (SELECT b1 FROM B WHERE b1 IS NOT NULL)", [3]),
    # ... and everything is NOT IN the empty set, NULL included
    ("a1 NOT IN (SELECT b1 FROM B WHERE b2 > 100)", [1, 2, 3, None]),
])
def test_subquery_tests(where, expected_a1):
    out = values(run_sql(f"SELECT * FROM A WHERE {where}", AB, B_ROWS + A_ROWS))
    assert sorted((r["a1"] for r in out), key=lambda v: (v is None, v)) == expected_a1


def test_anti_join_retracts_when_a_match_arrives():
    # A first: (3,3) is emitted, then B (3,7) arrives and retracts it (a -D of a key-less row
    # cannot be an upsert record: it goes to the dead letters, never a null-key null-value record).
    inputs = [row("A", 1, {"a1": 3, "a2": 3}), row("B", 2, {"b1": 3, "b2": 7})]
    assert values(run_sql("SELECT * FROM A WHERE NOT EXISTS (SELECT * FROM B WHERE a1 = b1)", AB, inputs)) == [
        {"a1": 3, "a2": 3}]


def test_plans_a_semi_join_with_the_subquery_filter_on_its_side():
    case = Case.from_json({"id": "p", "dialect": "flink", "sql": "", "sources": AB})
    [query] = plan_program("SELECT a2 FROM A WHERE a2 > 0 AND a1 IN (SELECT b1 FROM B WHERE b2 > 1)",
                           case_catalog(case), "flink").queries
    join = query.project.child
    assert isinstance(join, n.RegularJoin) and join.join_type == "SEMI" and join.kind == "stream"
    assert [k.sql() for k in join.left_keys + join.right_keys] == ["A.a1", "B.b1"]
    assert isinstance(join.right, n.Filter) and isinstance(join.left, n.Filter)
    assert query.value_columns == ("a2",)


@pytest.mark.parametrize("sql, rule", [
    ("SELECT * FROM A WHERE a1 IN (SELECT b1, b2 FROM B)", "subquery"),
    ("SELECT * FROM A WHERE EXISTS (SELECT b1 FROM B WHERE B.b1 = A.a1 GROUP BY b1)", "subquery"),
    ("SELECT * FROM A WHERE (a1, a2) IN (SELECT b1 FROM B)", "subquery"),
])
def test_unsupported_subqueries_are_rejected(sql, rule):
    with pytest.raises(StreamJoinError) as error:
        run_sql(sql, AB, A_ROWS)
    assert error.value.rule == rule and error.value.line == 1


def test_a_deletion_without_a_key_is_a_dead_letter_never_an_empty_record():
    case = Case.from_json({"id": "d", "dialect": "flink", "sources": AB, "inputs": [],
                           "sql": "SELECT * FROM A WHERE NOT EXISTS (SELECT * FROM B WHERE a1 = b1)"})
    planned = plan_case(case, topic_prefix="")
    runtime = planned.queries[0].factory(0)
    out = []
    for i, record in enumerate([row("A", 1, {"a1": 3, "a2": 3}), row("B", 2, {"b1": 3, "b2": 7})]):
        p = place(*planned.input_target(InputRecord.from_json(record)), sequence=i)
        out += runtime.process(InputRow(p.topic, p.partition, i, p.record.timestamp_ms, p.record.key, p.record.value))
    assert [type(o) for o in out] == [Emitted, Rejected]
    assert "without a key" in out[1].reason and runtime.counters()["unkeyed_retractions"] == 1


@pytest.mark.parametrize("where, expected_a1", [
    # (a1, a2) IN pairs of B: (1,1) only
    ("(a1, a2) IN (SELECT b1, b2 FROM B)", [1]),
    # NOT IN over pairs, null-aware per column: a row is blocked by a B row whose every column
    # equals it or is NULL on either side: (1,1) by (1,1); (NULL,4) by none (4 differs from 1, 5, 9)
    ("(a1, a2) NOT IN (SELECT b1, b2 FROM B)", [2, 3, None]),
    # IN over an aggregate: the largest b2 per b1 is {1, 5, 9}: only a2 = 1
    ("a2 IN (SELECT MAX(b2) FROM B GROUP BY b1)", [1]),
    ("a1 IN (SELECT DISTINCT b1 FROM B)", [1, 2]),
    ("NOT EXISTS (SELECT b1, COUNT(*) FROM B GROUP BY b1)", []),
])
def test_subqueries_beyond_one_relation(where, expected_a1):
    out = values(run_sql(f"SELECT * FROM A WHERE {where}", AB, B_ROWS + A_ROWS))
    assert sorted((r["a1"] for r in out), key=lambda v: (v is None, v)) == expected_a1
