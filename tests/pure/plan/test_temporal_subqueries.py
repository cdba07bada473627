"""Flink's document writes a temporal lookup as a correlated scalar subquery (MAX of the history's
time per correlated key, at or before the probe's time): it plans and runs as the temporal table
function join it means; any other correlated subquery is a positioned `subquery` error that says
what to write."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.dialect import StreamJoinError
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog
from streamjoin.plan.explain import explain
from tests.pure.plan.test_temporal_functions import EVENT, EVENT_QUERY, HISTORY, SOURCES, order, rate
from tests.pure.runtime.sql_case import run_sql

# the document's statement, as written
SUBQUERY = """SELECT
  SUM(o.amount * r.rate) AS amount
FROM Orders AS o,
  RatesHistory AS r
WHERE r.currency = o.currency
AND r.rowtime = (
  SELECT MAX(rowtime)
  FROM RatesHistory AS r2
  WHERE r2.currency = o.currency
  AND r2.rowtime <= o.rowtime);"""


def _join_lines(sql: str) -> list[str]:
    [query] = plan_program(HISTORY + sql, Catalog(), "flink").queries
    return [line for line in explain(query.root).splitlines() if "Join" in line or "Source" in line]


def test_the_documents_subquery_plans_as_the_temporal_table_function_join():
    lateral = EVENT + "SELECT SUM(o.amount * r.rate) AS amount FROM Orders AS o, LATERAL TABLE (Rates(o.rowtime)) AS r " \
                      "WHERE r.currency = o.currency;"
    assert _join_lines(SUBQUERY) == _join_lines(lateral)
    assert "as of o.rowtime (event time)" in _join_lines(SUBQUERY)[0]


def test_it_runs_as_the_lateral_table_query():
    inputs = [rate(0, "Euro", 114), rate(0, "Yen", 1), order(15, 2, "Euro"), order(32, 50, "Yen"),
              rate(45, "Euro", 116), order(52, 3, "Euro")]
    by_subquery = run_sql(SUBQUERY.replace("SUM(o.amount * r.rate)", "o.amount * r.rate"), SOURCES, inputs)
    assert [v for _, v in by_subquery] == [{"amount": 228}, {"amount": 50}, {"amount": 348}]
    assert run_sql(EVENT_QUERY, SOURCES, inputs, setup=[EVENT]) == by_subquery


@dataclass(frozen=True)
class Rejected:
    what: str
    sql: str


OUTER = "SELECT o.amount FROM Orders AS o, RatesHistory AS r WHERE r.currency = o.currency AND r.rowtime = "
REJECTED = [
    Rejected("MIN: the next version, not a temporal lookup", OUTER + "(SELECT MIN(rowtime) FROM RatesHistory AS r2 "
             "WHERE r2.currency = o.currency AND r2.rowtime >= o.rowtime);"),
    Rejected("a bound after the probe's time", OUTER + "(SELECT MAX(rowtime) FROM RatesHistory AS r2 "
             "WHERE r2.currency = o.currency AND r2.rowtime >= o.rowtime);"),
    Rejected("no correlated key", OUTER + "(SELECT MAX(rowtime) FROM RatesHistory AS r2 WHERE r2.rowtime <= o.rowtime);"),
    Rejected("the outer query does not match the key",
             "SELECT o.amount FROM Orders AS o, RatesHistory AS r WHERE r.rowtime = (SELECT MAX(rowtime) "
             "FROM RatesHistory AS r2 WHERE r2.currency = o.currency AND r2.rowtime <= o.rowtime);"),
    Rejected("versions of another table", "SELECT o.amount FROM Orders AS o, Orders2 AS r WHERE r.o_currency = "
             "o.currency AND r.o_amount = (SELECT MAX(rowtime) FROM RatesHistory AS r2 WHERE r2.currency = "
             "o.currency AND r2.rowtime <= o.rowtime);"),
]


@pytest.mark.parametrize("case", REJECTED, ids=lambda c: c.what)
def test_other_correlated_subqueries_say_what_to_write(case):
    with pytest.raises(StreamJoinError) as caught:
        plan_program(HISTORY + case.sql, Catalog(), "flink", file="q.sql")
    error = caught.value
    inside = case.sql.index("(SELECT ") + len("(SELECT ") + 1  # the subquery, from its first positioned word
    assert (error.rule, error.line, error.col) == ("subquery", 7, inside), str(error)
    assert "MAX(t)" in error.reason and "FOR SYSTEM_TIME AS OF" in error.reason
