"""Accumulators with retraction, and compile_aggregates on the seeds' aggregate queries."""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
import sqlglot

from streamjoin.expr.accumulators import (
    Accumulator,
    Avg,
    Count,
    CountRows,
    Distinct,
    Max,
    Min,
    Sum,
    SumFromZero,
)
from streamjoin.expr.aggregates import compile_aggregates
from streamjoin.dialect.flavours import Flink, Ksqldb
from streamjoin.expr.compile import ExpressionError, ExprOptions, Scope


@dataclass
class Case:
    """`steps`: ('+', value) adds, ('-', value) retracts; `results`: result() after each step."""

    name: str
    accumulator: Any
    steps: list[tuple[str, Any]]
    results: list[Any]


CASES = [
    Case("COUNT(*) counts NULL rows", CountRows, [("+", None), ("+", 1), ("-", None)], [1, 2, 1]),
    Case("COUNT(x) skips NULL", Count, [("+", None), ("+", 1), ("+", 2), ("-", 1)], [0, 1, 2, 1]),
    Case("SUM is NULL until a value, again after all retracted", Sum,
         [("+", None), ("+", 5), ("+", 7), ("-", 5), ("-", 7)], [None, 5, 12, 7, None]),
    Case("ksqlDB's SUM starts at 0", SumFromZero,
         [("+", None), ("+", 5), ("-", 5), ("+", None)], [0, 5, 0, 0]),
    Case("SUM keeps DECIMAL exact", Sum, [("+", Decimal("0.1")), ("+", Decimal("0.2")), ("-", Decimal("0.1"))],
         [Decimal("0.1"), Decimal("0.3"), Decimal("0.2")]),
    Case("SUM of DECIMAL and DOUBLE is DOUBLE", Sum, [("+", Decimal("1.5")), ("+", 1.0)], [Decimal("1.5"), 2.5]),
    Case("AVG of INT is DOUBLE", Avg, [("+", 1), ("+", 2), ("-", 1), ("-", 2)], [1.0, 1.5, 2.0, None]),
    Case("AVG of DECIMAL is DECIMAL", Avg, [("+", Decimal(1)), ("+", Decimal(2))], [Decimal(1), Decimal("1.5")]),
    # MIN/MAX keep a multiset: retracting the extreme falls back to the next value
    Case("MAX falls back on retraction", Max, [("+", 5), ("+", 9), ("+", 9), ("-", 9), ("-", 9), ("-", 5)],
         [5, 9, 9, 9, 5, None]),
    Case("MIN ignores NULL", Min, [("+", None), ("+", "b"), ("+", "a"), ("-", "a"), ("-", None)],
         [None, "b", "a", "b", "b"]),
    Case("COUNT(DISTINCT x)", lambda: Distinct(Count()), [("+", "a"), ("+", "a"), ("+", "b"), ("-", "a"), ("-", "a")],
         [1, 1, 2, 2, 1]),
    Case("SUM(DISTINCT x)", lambda: Distinct(Sum()), [("+", 3), ("+", 3), ("+", 4), ("-", 3)], [3, 3, 7, 7]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_accumulator(case: Case) -> None:
    accumulator = case.accumulator()
    results = []
    for op, value in case.steps:
        (accumulator.add if op == "+" else accumulator.retract)(value)
        results.append(accumulator.result())
        accumulator = pickle.loads(pickle.dumps(accumulator))  # state survives a checkpoint
    assert results == case.results


@pytest.mark.parametrize("accumulator", [CountRows, Count, Sum, Avg, Min, Max, lambda: Distinct(Count())])
def test_retracting_what_was_never_added_is_an_error(accumulator: Any) -> None:
    with pytest.raises(ValueError, match="never received"):
        accumulator().retract(3)


@dataclass
class MergeCase:
    """Two sessions' values merged: `result` is the merged accumulator's result, which must also
    be what one accumulator given both sides' values returns."""

    accumulator: Any
    left: list[Any]
    right: list[Any]
    result: Any


MERGE_CASES = {
    "COUNT(*) adds the counts": MergeCase(CountRows, [1, None], [None], 3),
    "COUNT(x) adds the non-NULL counts": MergeCase(Count, [1, None], [2], 2),
    "SUM adds the totals": MergeCase(Sum, [5, 7], [1], 13),
    "SUM of an all-NULL side stays the other's": MergeCase(Sum, [None], [Decimal("1.5")], Decimal("1.5")),
    "SUM of two all-NULL sides is NULL": MergeCase(Sum, [None], [None], None),
    "AVG weighs by both counts": MergeCase(Avg, [1, 2, 3], [10], 4.0),
    "MIN over both multisets": MergeCase(Min, ["b", "c"], ["a"], "a"),
    "MAX over both multisets": MergeCase(Max, [5], [9, None], 9),
    "COUNT(DISTINCT x) counts a value both sides saw once": MergeCase(lambda: Distinct(Count()), ["a", "b"],
                                                                     ["b", "c", "c"], 3),
    "SUM(DISTINCT x)": MergeCase(lambda: Distinct(Sum()), [3, 4], [4, 5], 12),
}


@pytest.mark.parametrize("name", MERGE_CASES)
def test_merge(name: str) -> None:
    case = MERGE_CASES[name]
    left, right, whole = case.accumulator(), case.accumulator(), case.accumulator()
    for value in case.left:
        left.add(value)
        whole.add(value)
    for value in case.right:
        right.add(value)
        whole.add(value)
    left.merge(right)
    assert left.result() == whole.result() == case.result


def test_merged_values_can_be_retracted() -> None:
    # MAX keeps the merged multiset: retracting the right side's maximum falls back to the left's
    left, right = Max(), Max()
    left.add(5)
    right.add(9)
    left.merge(right)
    left.retract(9)
    assert left.result() == 5


def test_an_accumulator_without_merge_cannot_merge() -> None:
    class Opaque(CountRows):
        merge = Accumulator.merge

    assert (CountRows.can_merge(), Opaque.can_merge()) == (True, False)
    with pytest.raises(NotImplementedError):
        Opaque().merge(Opaque())


def test_flink_rates_sum_running_totals() -> None:
    # flink.temporal_function.rates_sum: each order joined with the rate valid at its rowtime.
    # 10:15 2 Euro x 114 | 10:30 1 US Dollar x 102 | 10:32 50 Yen x 1 | 10:52 3 Euro x 116 | 11:04 5 USD x 102
    select = sqlglot.parse_one("SELECT SUM(o.amount * r.rate) AS amount FROM Orders AS o, LATERAL TABLE (Rates(o.rowtime)) AS r")
    plan = compile_aggregates(select.expressions, Scope({"o": ["rowtime", "amount", "currency"], "r": ["currency", "rate"]}))
    state, totals = plan.new_state(), []
    for amount, rate in [(2, 114), (1, 102), (50, 1), (3, 116), (5, 102)]:
        env = {"o": {"amount": amount}, "r": {"rate": rate}}
        plan.add(state, env)
        totals.append(plan.result(plan.group_key(env), state))
    assert totals == [{"amount": 228}, {"amount": 330}, {"amount": 380}, {"amount": 728}, {"amount": 1238}]


@pytest.mark.parametrize("flavour, sums", [(Ksqldb(), [0, 5]), (Flink(), [None, 5])])
def test_sum_over_a_left_joins_missing_side(flavour, sums) -> None:
    # T1 LEFT JOIN T2 ... SUM(t2.total): t1's row before its T2 row (total NULL), then with total 5
    select = sqlglot.parse_one("SELECT t1.id, SUM(t2.total) AS s FROM t1 GROUP BY t1.id")
    plan = compile_aggregates(select.expressions, Scope({"t1": ["id"], "t2": ["total"]}, ExprOptions.of(flavour)),
                              group_by=[sqlglot.parse_one("t1.id")])
    state, results = plan.new_state(), []
    for total in (None, 5):
        env = {"t1": {"id": 1}, "t2": {"total": total}}
        plan.add(state, env)
        results.append(plan.result(plan.group_key(env), state)["s"])
    assert results == sums


def test_flink_usage_sum_with_unqualified_prefixed_columns() -> None:
    select = sqlglot.parse_one("SELECT SUM(o_amount * r_rate) AS amount FROM Orders, LATERAL TABLE (Rates(o_proctime))")
    scope = Scope({"Orders": ["o_amount", "o_currency", "o_proctime"], "Rates": ["r_currency", "r_rate", "r_proctime"]})
    plan = compile_aggregates(select.expressions, scope)
    state = plan.new_state()
    plan.add(state, {"Orders": {"o_amount": 2}, "Rates": {"r_rate": 114}})
    assert plan.result((), state) == {"amount": 228}


LENSES_GROUP = """SELECT STREAM customersTable.name, COUNT(*) AS item_count
FROM ordersStream JOIN customersTable ON customersTable.id = ordersStream.customer_id
GROUP BY customersTable.name"""
LENSES_SCOPE = Scope({"ordersStream": ["_key", "customer_id", "item"], "customersTable": ["_key", "id", "name"]})


def test_lenses_join_then_group_counts_per_name_and_retracts() -> None:
    select = sqlglot.parse_one(LENSES_GROUP.replace("SELECT STREAM", "SELECT"))
    plan = compile_aggregates(select.expressions, LENSES_SCOPE, select.args["group"].expressions)
    states: dict[tuple, Any] = {}

    def apply(op: str, name: str, item: str) -> dict:
        env = {"ordersStream": {"item": item}, "customersTable": {"name": name}}
        key = plan.group_key(env)
        state = states.setdefault(key, plan.new_state())
        (plan.add if op == "+" else plan.retract)(state, env)
        return plan.result(key, state) | {"rows": state.rows}

    # Computer and Mouse join John (Keyboard has no customer: never reaches the aggregate)
    assert apply("+", "John", "Computer") == {"name": "John", "item_count": 1, "rows": 1}
    assert apply("+", "John", "Mouse") == {"name": "John", "item_count": 2, "rows": 2}
    assert apply("+", "Frank", "Pen") == {"name": "Frank", "item_count": 1, "rows": 1}
    assert apply("-", "John", "Mouse") == {"name": "John", "item_count": 1, "rows": 1}
    assert apply("-", "Frank", "Pen") == {"name": "Frank", "item_count": 0, "rows": 0}  # group now empty


def test_post_aggregate_expressions_and_key_spellings() -> None:
    # `name` and `C.NAME` are the group key `customersTable.name`; arithmetic over aggregates.
    select = sqlglot.parse_one(
        "SELECT UPPER(name) AS who, SUM(o.amount) / COUNT(o.amount) AS mean, MAX(o.amount) - MIN(o.amount) AS spread, "
        "COUNT(DISTINCT o.amount) AS kinds, 1 AS one FROM x GROUP BY C.NAME"
    )
    plan = compile_aggregates(select.expressions, Scope({"C": ["name"], "o": ["amount"]}), select.args["group"].expressions)
    assert plan.output_names == ["who", "mean", "spread", "kinds", "one"]
    assert [call.sql for call in plan.calls] == [
        "SUM(o.amount)", "COUNT(o.amount)", "MAX(o.amount)", "MIN(o.amount)", "COUNT(DISTINCT o.amount)"]
    state = plan.new_state()
    for amount in (4, 10, 4, None):
        plan.add(state, {"C": {"name": "ann"}, "o": {"amount": amount}})
    assert plan.result(("ann",), state) == {"who": "ANN", "mean": 6, "spread": 6, "kinds": 2, "one": 1}


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELECT o.item, COUNT(*) FROM x GROUP BY C.name", "column o.item must be in GROUP BY or inside an aggregate"),
        ("SELECT SUM(MAX(o.amount)) FROM x", "cannot nest aggregates"),
        ("SELECT STDDEV(o.amount) FROM x", "unsupported aggregate STDDEV"),
        ("SELECT SUM(o.nope) FROM x", "unknown column 'nope'"),
    ],
)
def test_aggregate_errors(sql: str, message: str) -> None:
    select = sqlglot.parse_one(sql)
    group = select.args["group"].expressions if select.args.get("group") else ()
    with pytest.raises(ExpressionError, match=message):
        compile_aggregates(select.expressions, Scope({"C": ["name"], "o": ["amount", "item"]}), group)
