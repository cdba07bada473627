"""Flink SQL planning: the Flink flavour's switches, from case settings and DDL to plan nodes."""

from __future__ import annotations

import pytest

from streamjoin.plan import nodes as n
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog


def _stream(name, columns, timestamp=None, key=()):
    return {"name": name, "kind": "stream" if not key else "table", "topic": name, "partitions": 1,
            "key": list(key), "columns": columns, "timestamp": timestamp}


T1T2 = Catalog.from_case_sources([
    _stream("T1", {"k": "STRING", "id": "STRING", "rowtime": "TIMESTAMP(3)"}, "rowtime"),
    _stream("T2", {"k": "STRING", "id": "STRING", "rowtime": "TIMESTAMP(3)"}, "rowtime"),
])


def test_watermark_delay_setting_is_the_sources_watermark():
    # settings.watermark_delay_ms states `WATERMARK FOR rowtime AS rowtime - INTERVAL ...` per source
    program = plan_program("SELECT t1.id FROM T1 t1 JOIN T2 t2 ON t1.k = t2.k AND "
                           "t1.rowtime BETWEEN t2.rowtime - INTERVAL '1' SECOND AND t2.rowtime", T1T2, "flink",
                           settings={"watermark_delay_ms": {"T1": 1000, "t2": 5}})
    assert (program.catalog.get("T1").watermark_delay_ms, program.catalog.get("T2").watermark_delay_ms) == (1000, 5)
    join = program.queries[0].project.child
    assert isinstance(join, n.IntervalJoin) and join.left.source.watermark_delay_ms == 1000


KEYED = Catalog.from_case_sources([
    _stream("lt", {"k": "INT", "v": "STRING"}, key=["k"]),
    _stream("rt", {"k": "INT", "w": "STRING"}, key=["k"]),
    _stream("orders", {"oid": "INT", "cur": "STRING", "ot": "TIMESTAMP(3)"}, "ot", key=["oid"]),
    {"name": "rates", "kind": "versioned_table", "topic": "rates", "partitions": 1, "key": ["cur"],
     "columns": {"cur": "STRING", "rate": "INT", "rt": "TIMESTAMP(3)"}, "timestamp": "rt"},
    _stream("s", {"k": "INT", "x": "STRING"}),
])


@pytest.mark.parametrize("sql, key", [
    # the right input's key lies in the join columns: each left row joins at most one right row
    ("SELECT l.k, l.v, r.w FROM lt l LEFT JOIN rt r ON l.k = r.k", ["k"]),
    ("SELECT r.k AS rk, l.v FROM lt l RIGHT JOIN rt r ON l.k = r.k", ["rk"]),
    ("SELECT l.v, r.w FROM lt l LEFT JOIN rt r ON l.k = r.k", []),  # the key is not projected
    ("SELECT s.x, r.w FROM s JOIN rt r ON s.k = r.k", []),  # a stream has no upsert key
    ("SELECT l.k, r.k AS k2 FROM lt l FULL JOIN rt r ON l.k = r.k", []),  # both sides null-padded
    ("SELECT l.k, r.w FROM lt l JOIN rt r ON l.v = r.w", []),  # many-to-many
    # a temporal join keeps the probe's key
    ("SELECT o.oid, r.rate FROM orders o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r ON o.cur = r.cur", ["oid"]),
    ("SELECT w, COUNT(*) AS n FROM rt GROUP BY w", ["w"]),
    ("SELECT k, v FROM (SELECT k, v FROM lt WHERE v > 'a') t", ["k"]),  # through a derived table
    ("SELECT k FROM lt WHERE k IN (SELECT k FROM rt)", ["k"]),  # SEMI keeps the left's key
])
def test_output_key_is_the_projected_upsert_key(sql, key):
    [query] = plan_program(sql, KEYED, "flink").queries
    assert list(query.key_columns) == key
    assert set(key) <= set(query.value_columns)  # Flink keeps every projected column in the value


def test_a_temporal_join_of_a_table_probe_is_an_updating_result():
    [query] = plan_program("SELECT o.oid, r.rate FROM orders o JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r "
                           "ON o.cur = r.cur", KEYED, "flink").queries
    assert (query.sink.kind, query.key_columns) == ("table", ("oid",))  # a Delta output MERGEs by oid
