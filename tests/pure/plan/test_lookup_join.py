"""Flink's lookup join planned: the Flink document's processing-time temporal join (its LatestRates
example, `JOIN LatestRates FOR SYSTEM_TIME AS OF o.proctime AS r ON r.currency = o.currency`)
against a `'connector' = 'jdbc'` table is a LookupJoin reading a LookupTable (no topic), EXPLAIN
shows it with its cache and without the password; the cache options as Flink reads them."""

from __future__ import annotations

import pytest

from streamjoin.kinds import JoinType
from streamjoin.plan import explain, plan_program
from streamjoin import plan as P
from streamjoin.plan.lookup_spec import JdbcTable, LookupCache
from streamjoin.plan.rewrites import walk

ORDERS = ("CREATE TABLE Orders (amount INT, currency STRING, proctime AS PROCTIME()) "
          "WITH ('connector' = 'kafka', 'topic' = 'orders', 'value.format' = 'json');\n")
RATES = ("CREATE TABLE LatestRates (currency STRING, rate INT, PRIMARY KEY (currency) NOT ENFORCED) WITH ("
         "'connector' = 'jdbc', 'url' = 'jdbc:postgresql://db.example:5433/rates', 'table-name' = 'fx.latest_rates', "
         "'username' = 'reader', 'password' = 'hunter2'{cache});\n")
# The document's query (its SELECT list's `o.amout` typo written `o.amount`).
DOCUMENT_QUERY = """SELECT
  o.amount, o.currency, r.rate, o.amount * r.rate
FROM
  Orders AS o
  JOIN LatestRates FOR SYSTEM_TIME AS OF o.proctime AS r
  ON r.currency = o.currency;"""


def planned(cache: str = "", query: str = DOCUMENT_QUERY):
    program = plan_program(ORDERS + RATES.format(cache=cache) + query, dialect="flink")
    return program.queries[-1]


def test_the_documents_processing_time_join_against_a_jdbc_table_is_a_lookup_join():
    query = planned()
    [join] = [n for n in walk(query.sink) if isinstance(n, P.LookupJoin)]
    assert join.join_type is JoinType.INNER and isinstance(join.right, P.LookupTable)
    assert [k.sql() for k in join.right_keys] == ["r.currency"] and [k.sql() for k in join.left_keys] == ["o.currency"]
    assert join.right.source.lookup == JdbcTable("jdbc:postgresql://db.example:5433/rates", "db.example", 5433, "rates",
                                                 "fx.latest_rates", "reader", "hunter2")
    assert [s.source.topic for s in walk(query.sink) if isinstance(s, P.Source)] == ["orders"]  # no topic for the table
    text = explain(query)
    assert "LookupJoin INNER" in text and "lookup as of o.proctime (processing time, in the tasks)" in text
    assert "LookupTable LatestRates AS r  jdbc jdbc:postgresql://db.example:5433/rates table fx.latest_rates as reader" in text
    assert "hunter2" not in text


def test_a_left_lookup_join_keeps_the_probe_rows():
    query = planned(query="SELECT o.amount, r.rate FROM Orders AS o LEFT JOIN LatestRates FOR SYSTEM_TIME AS OF "
                          "o.proctime AS r ON r.currency = o.currency;")
    [join] = [n for n in walk(query.sink) if isinstance(n, P.LookupJoin)]
    assert join.join_type is JoinType.LEFT and join.kind == "stream"


CACHES = {
    "none given: no cache": ("", LookupCache()),
    "old style, both given": (", 'lookup.cache.max-rows' = '500', 'lookup.cache.ttl' = '10s'",
                              LookupCache(500, 10_000)),
    "old style, ttl alone: Flink does not cache": (", 'lookup.cache.ttl' = '10s'", LookupCache()),
    "old style, missing keys not cached": (", 'lookup.cache.max-rows' = '5', 'lookup.cache.ttl' = '1 min', "
                                           "'lookup.cache.caching-missing-key' = 'false'", LookupCache(5, 60_000, None, False)),
    "PARTIAL": (", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100', "
                "'lookup.partial-cache.expire-after-access' = '30s'", LookupCache(100, None, 30_000)),
    "NONE": (", 'lookup.cache' = 'NONE', 'lookup.cache.max-rows' = '5'", LookupCache()),
    "retries": (", 'lookup.max-retries' = '0'", LookupCache()),
}


@pytest.mark.parametrize("name", CACHES)
def test_the_cache_options(name):
    options, expected = CACHES[name]
    [table] = [n for n in walk(planned(options).sink) if isinstance(n, P.LookupTable)]
    assert table.source.lookup.cache == expected
    assert table.source.lookup.max_retries == (0 if "max-retries" in options else 3)
