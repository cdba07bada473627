"""Flink relations beyond catalog sources, end to end in-process: derived tables (a subquery in
FROM, named or not) and views (CREATE [TEMPORARY] VIEW, read by a later statement or a temporal
table function)."""

from __future__ import annotations

import pytest

from streamjoin.dialect import StreamJoinError
from tests.pure.runtime.sql_case import row, run_sql, source, values

T = [source("T1", {"a": "INT", "b": "BIGINT", "c": "STRING"}), source("T2", {"a": "INT", "b": "BIGINT", "c": "STRING"})]
# T1 rows (a, b, c) then T2 rows; `if(a = 3, NULL, a)` turns a = 3 into a NULL key on both sides.
ROWS = [row("T1", 1, {"a": 1, "b": 1, "c": "x1"}), row("T1", 2, {"a": 1, "b": 5, "c": "x5"}),
        row("T1", 3, {"a": 3, "b": 8, "c": "x8"}), row("T2", 4, {"a": 1, "b": 2, "c": "y2"}),
        row("T2", 5, {"a": 3, "b": 2, "c": "y3"})]


def test_derived_tables_joined():
    # t1 (1,1,x1) (1,5,x5) (NULL,8,x8) ⋈ t2 (1,2,y2) (NULL,2,y3) ON a = a AND t1.b > t2.b:
    # x5 > y2 only; the NULL keys never join.
    sql = ("SELECT t2.c, t1.c AS c0 FROM (SELECT if(a = 3, cast(null as int), a) AS a, b, c FROM T1) AS t1 "
           "JOIN (SELECT if(a = 3, cast(null as int), a) AS a, b, c FROM T2) AS t2 ON t1.a = t2.a AND t1.b > t2.b")
    assert values(run_sql(sql, T, ROWS)) == [{"c": "y2", "c0": "x5"}]


def test_unnamed_derived_table_aggregated():
    # The outer query reads the unnamed subquery's columns unqualified: counts per a of T1.
    sql = "SELECT a, COUNT(c) AS n FROM (SELECT a, c FROM T1 WHERE b < 8) GROUP BY a"
    assert values(run_sql(sql, T, ROWS)) == [{"a": 1, "n": 1}, {"a": 1, "n": 2}]


def test_view_from_setup_read_by_the_query():
    setup = ["CREATE TEMPORARY VIEW big AS SELECT a, c FROM T1 WHERE b > 1"]
    assert values(run_sql("SELECT c FROM big", T, ROWS, setup=setup)) == [{"c": "x5"}, {"c": "x8"}]


def test_view_of_a_versioned_table_stays_versioned():
    # FOR SYSTEM_TIME AS OF over a view that passes the key and time attribute through.
    sources = [source("orders", {"id": "INT", "cur": "STRING", "ot": "TIMESTAMP(3)"}, timestamp="ot"),
               source("rates", {"cur": "STRING", "rate": "INT", "rt": "TIMESTAMP(3)"}, key=["cur"],
                      kind="versioned_table", timestamp="rt")]
    inputs = [row("rates", 1000, {"rate": 10, "rt": "1970-01-01 00:00:01"}, key="EUR"),
              row("orders", 2000, {"id": 1, "cur": "EUR", "ot": "1970-01-01 00:00:02"}),
              row("rates", 3000, {"rate": 11, "rt": "1970-01-01 00:00:03"}, key="EUR"),
              row("orders", 4000, {"id": 2, "cur": "EUR", "ot": "1970-01-01 00:00:04"})]
    sql = ("SELECT o.id, r.rate FROM orders AS o JOIN v FOR SYSTEM_TIME AS OF o.ot AS r ON o.cur = r.cur "
           "WHERE r.rate < 11")
    assert values(run_sql(sql, sources, inputs, setup=["CREATE VIEW v AS SELECT * FROM rates"])) == [
        {"id": 1, "rate": 10}]


def test_temporal_table_function_over_a_filtered_view():
    # Rates = FilteredHistory.createTemporalTableFunction(rt, cur): only rates > 10 are versions.
    sources = [source("orders", {"amount": "INT", "cur": "STRING", "ot": "TIMESTAMP(3)"}, timestamp="ot"),
               source("history", {"cur": "STRING", "rate": "INT", "rt": "TIMESTAMP(3)"}, timestamp="rt")]
    inputs = [row("history", 1, {"cur": "EUR", "rate": 12, "rt": "1970-01-01 00:00:00.001"}),
              row("history", 1, {"cur": "USD", "rate": 9, "rt": "1970-01-01 00:00:00.001"}),
              row("orders", 2, {"amount": 2, "cur": "EUR", "ot": "1970-01-01 00:00:00.002"}),
              row("orders", 3, {"amount": 1, "cur": "USD", "ot": "1970-01-01 00:00:00.003"})]
    function = {"name": "Rates", "history_table": "FilteredHistory", "time_attribute": "rt", "primary_key": "cur"}
    sql = "SELECT o.amount * r.rate AS amount FROM orders AS o, LATERAL TABLE (Rates(o.ot)) AS r WHERE r.cur = o.cur"
    out = run_sql(sql, sources, inputs, setup=["CREATE VIEW FilteredHistory AS SELECT * FROM history WHERE rate > 10"],
                  settings={"temporal_table_function": function})
    assert values(out) == [{"amount": 24}]


@pytest.mark.parametrize("dialect, sql", [
    ("ksqldb", "SELECT * FROM (SELECT * FROM T1) t"),
    ("lenses", "SELECT STREAM * FROM (SELECT STREAM * FROM T1) t"),
])
def test_other_flavours_reject_derived_tables(dialect, sql):
    with pytest.raises(StreamJoinError) as error:
        run_sql(sql, T, ROWS, dialect=dialect)
    assert error.value.rule == "subquery" and error.value.line == 1  # plan.checks: before planning
