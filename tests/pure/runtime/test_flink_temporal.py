"""Flink event-time temporal joins, end to end in-process: a versioned table joined on its
primary key plus other columns (its deletions still end versions), a composite primary key (a
JSON record key), and an upsert probe side whose deletions reach the sink as tombstones of the
result's upsert key (the probe's key)."""

from __future__ import annotations

import pytest

from tests.pure.runtime.sql_case import row, run_sql, source


def _ts(second: int) -> str:
    return f"1970-01-01 00:00:{second:02d}.000"


ORDERS = source("orders", {"oid": "INT", "cur": "STRING", "no": "STRING", "ot": "TIMESTAMP(3)"}, key=["oid"],
                timestamp="ot")


def _order(second, oid, cur, no="n1"):
    return row("orders", second * 1000, {"cur": cur, "no": no, "ot": _ts(second)}, key=oid)


def _rate(second, cur, rate, no="n1", name="rates"):
    return row(name, second * 1000, None if rate is None else {"no": no, "rate": rate, "rt": _ts(second)}, key=cur)


RATES = source("rates", {"cur": "STRING", "no": "STRING", "rate": "INT", "rt": "TIMESTAMP(3)"}, key=["cur"],
               kind="versioned_table", timestamp="rt")


@pytest.mark.parametrize("on", ["o.cur = r.cur", "o.cur = r.cur AND o.no = r.no", "o.no = r.no AND o.cur = r.cur"])
def test_a_deletion_ends_the_version_whatever_else_the_condition_holds(on):
    # RMB 7 @1 ; order 1 RMB @2 -> 7 ; RMB deleted @3 ; order 2 RMB @4 -> no version (INNER: nothing)
    inputs = [_rate(1, "RMB", 7), _order(2, 1, "RMB"), _rate(3, "RMB", None), _order(4, 2, "RMB")]
    sql = f"SELECT o.oid, r.rate FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r ON {on}"
    assert run_sql(sql, [ORDERS, RATES], inputs) == [(1, {"oid": 1, "rate": 7})]


def test_probe_deletions_and_updates_reach_the_sink_by_the_probe_key():
    # LEFT JOIN: order 1 (EUR @2) joined; order 2 (YEN @3) padded, then updated to EUR @5 and
    # deleted. The result is keyed by oid: the update is a new value of key 2, the delete its
    # tombstone; the update's retraction (-U) is not written.
    inputs = [_rate(1, "EUR", 10), _order(2, 1, "EUR"), _order(3, 2, "YEN"), _order(5, 2, "EUR"),
              row("orders", 6000, None, key=2)]
    sql = ("SELECT o.oid, o.cur, r.rate FROM orders AS o LEFT JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r "
           "ON o.cur = r.cur")
    assert run_sql(sql, [ORDERS, RATES], inputs) == [
        (1, {"oid": 1, "cur": "EUR", "rate": 10}), (2, {"oid": 2, "cur": "YEN", "rate": None}),
        (2, {"oid": 2, "cur": "EUR", "rate": 10}), (2, None)]


def test_inner_join_deletion_of_an_unjoined_probe_row_emits_nothing():
    inputs = [_order(2, 1, "YEN"), row("orders", 3000, None, key=1), _rate(4, "EUR", 10)]
    sql = "SELECT o.oid, r.rate FROM orders AS o JOIN rates FOR SYSTEM_TIME AS OF o.ot AS r ON o.cur = r.cur"
    assert run_sql(sql, [ORDERS, RATES], inputs) == []


def test_composite_primary_key_is_a_json_record_key():
    rates = source("rates2", {"cur": "STRING", "no": "STRING", "rate": "INT", "rt": "TIMESTAMP(3)"},
                   key=["cur", "no"], kind="versioned_table", timestamp="rt")
    inputs = [row("rates2", 1000, {"rate": 7, "rt": _ts(1)}, key={"cur": "RMB", "no": "n1"}),
              row("rates2", 1000, {"rate": 8, "rt": _ts(1)}, key={"cur": "RMB", "no": "n2"}),
              _order(2, 1, "RMB", "n2")]
    sql = ("SELECT o.oid, r.rate FROM orders AS o JOIN rates2 FOR SYSTEM_TIME AS OF o.ot AS r "
           "ON o.cur = r.cur AND o.no = r.no")
    assert run_sql(sql, [ORDERS, rates], inputs) == [(1, {"oid": 1, "rate": 8})]
