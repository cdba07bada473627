"""Flink temporal table functions declared in SQL (`CREATE FUNCTION Rates AS
RatesHistory.createTemporalTableFunction(rowtime, currency)`): the document's LATERAL TABLE
queries plan in event and processing time, run as the Table API declaration (a case setting)
runs, and a declaration that cannot be one is a positioned error."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.dialect import StreamJoinError
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog
from streamjoin.plan.explain import explain
from tests.pure.runtime.sql_case import row, run_sql, source

HISTORY = """CREATE TABLE Orders (amount INT, currency STRING, rowtime TIMESTAMP(3), WATERMARK FOR rowtime AS rowtime)
  WITH ('topic' = 'orders');
CREATE TABLE RatesHistory (currency STRING, rate INT, rowtime TIMESTAMP(3), WATERMARK FOR rowtime AS rowtime)
  WITH ('topic' = 'rates_history');
CREATE TABLE Orders2 (o_amount INT, o_currency STRING, o_proctime AS PROCTIME()) WITH ('topic' = 'orders2');
CREATE TABLE RatesHistory2 (r_currency STRING, r_rate INT, r_proctime AS PROCTIME()) WITH ('topic' = 'rates2');
"""
EVENT = "CREATE FUNCTION Rates AS RatesHistory.createTemporalTableFunction(rowtime, currency);\n"
PROC = "CREATE TEMPORARY FUNCTION Rates2 AS RatesHistory2.createTemporalTableFunction(r_proctime, r_currency);\n"
# the document's two queries, as written
EVENT_QUERY = ("SELECT\n  o.amount * r.rate AS amount\nFROM\n  Orders AS o,\n  LATERAL TABLE (Rates(o.rowtime)) AS r\n"
               "WHERE r.currency = o.currency")
PROC_QUERY = ("SELECT\n  SUM(o_amount * r_rate) AS amount\nFROM\n  Orders2,\n  LATERAL TABLE (Rates2(o_proctime))\n"
              "WHERE\n  r_currency = o_currency")


@pytest.mark.parametrize("declared, query, shown", [
    (EVENT, EVENT_QUERY, "TemporalJoin INNER  -> stream  on o.currency = r.currency  as of o.rowtime (event time)"),
    (PROC, PROC_QUERY, "as of Orders2.o_proctime (processing time)"),
])
def test_the_documents_lateral_table_queries_plan(declared, query, shown):
    [planned] = plan_program(HISTORY + declared + query, Catalog(), "flink").queries
    assert shown in explain(planned.root)


@dataclass(frozen=True)
class Rejected:
    declaration: str
    rule: str
    col: int


REJECTED = [
    Rejected("CREATE FUNCTION Rates AS RatesHistory.versions(rowtime, currency)", "temporal-function", 26),
    Rejected("CREATE FUNCTION Rates AS Nowhere.createTemporalTableFunction(rowtime, currency)", "unknown-relation", 26),
    Rejected("CREATE FUNCTION Rates AS RatesHistory.createTemporalTableFunction(rate, currency)", "temporal-function", 67),
    Rejected("CREATE FUNCTION Rates AS RatesHistory.createTemporalTableFunction(rowtime, code)", "unknown-column", 76),
    Rejected("CREATE FUNCTION Rates AS RatesHistory.createTemporalTableFunction(rowtime)", "temporal-function", 39),
]


@pytest.mark.parametrize("case", REJECTED, ids=lambda c: c.declaration[40:])
def test_a_bad_declaration_is_a_positioned_error(case):
    with pytest.raises(StreamJoinError) as caught:
        plan_program(HISTORY + case.declaration + ";", Catalog(), "flink", file="sources.sql")
    error = caught.value
    assert (error.rule, error.line, error.col) == (case.rule, 7, case.col), str(error)


def test_other_flavours_declare_no_temporal_function():
    with pytest.raises(StreamJoinError) as caught:
        plan_program("CREATE STREAM h (k STRING KEY, ts BIGINT) WITH (kafka_topic='h');\n"
                     "CREATE FUNCTION F AS h.createTemporalTableFunction(ts, k);", Catalog(), "ksqldb")
    assert caught.value.rule == "unsupported-statement"


# the document's Orders and RatesHistory, as case sources, and their rows at 10:mm
SOURCES = [source("Orders", {"amount": "INT", "currency": "STRING", "rowtime": "TIMESTAMP(3)"}, timestamp="rowtime"),
           source("RatesHistory", {"currency": "STRING", "rate": "INT", "rowtime": "TIMESTAMP(3)"}, timestamp="rowtime")]


def order(minute: int, amount: int, currency: str) -> dict:
    return row("Orders", minute * 60_000, {"amount": amount, "currency": currency, "rowtime": _ts(minute)})


def rate(minute: int, currency: str, value: int) -> dict:
    return row("RatesHistory", minute * 60_000, {"currency": currency, "rate": value, "rowtime": _ts(minute)})


def _ts(minute: int) -> str:
    return f"1970-01-01 10:{minute:02d}:00.000"


def test_a_declared_function_runs_as_the_table_api_one():
    sources, inputs = SOURCES, [rate(0, "Euro", 114), order(15, 2, "Euro"), rate(45, "Euro", 116), order(52, 3, "Euro")]
    table_api = {"temporal_table_function": {"name": "Rates", "history_table": "RatesHistory",
                                             "time_attribute": "rowtime", "primary_key": "currency"}}
    expected = run_sql(EVENT_QUERY, sources, inputs, settings=table_api)
    assert [v for _, v in expected] == [{"amount": 228}, {"amount": 348}]
    assert run_sql(EVENT_QUERY, sources, inputs, setup=[EVENT]) == expected
