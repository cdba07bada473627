"""Lenses reads a topic the way the query says (SELECT TABLE / SELECT STREAM), whatever its
declaration: the same two topics make a table-table join in one query and a windowed
stream-stream join in the other, end to end in-process."""

from __future__ import annotations

from tests.pure.runtime.sql_case import row, run_sql, source

# customers is declared a table and orders a stream, as in the Lenses document
SOURCES = [source("customers", {"_key": "INT", "id": "INT", "name": "STRING"}, key=["_key"]),
           source("orders", {"_key": "INT", "customer_id": "INT", "item": "STRING"}, key=["_key"], kind="stream")]


def _order(ts: int, key: int, item: str | None) -> dict:
    return row("orders", ts, None if item is None else {"customer_id": key, "item": item}, key=key)


def _customer(ts: int, key: int, name: str) -> dict:
    return row("customers", ts, {"id": key, "name": name}, key=key)


def test_select_table_reads_the_declared_stream_as_a_table():
    # read as a table, an order already there joins the customer who arrives later, and its
    # tombstone deletes the joined row
    inputs = [_order(1000, 1, "Computer"), _customer(2000, 1, "Frank"), _order(3000, 1, None)]
    out = run_sql("SELECT TABLE customers.name, orders.item FROM customers JOIN orders;", SOURCES, inputs,
                  dialect="lenses")
    assert out == [(1, {"name": "Frank", "item": "Computer"}), (1, None)]


def test_select_stream_reads_the_declared_table_as_a_stream():
    # read as streams, the customer record joins orders within 5 s either side only
    inputs = [_customer(6000, 1, "Frank"), _order(10_000, 1, "Computer"), _customer(20_000, 2, "John"),
              _order(11_000, 2, "Keyboard")]
    out = run_sql("SELECT STREAM customers.name, orders.item FROM customers LEFT JOIN orders WITHIN 5s "
                  "ON customers.id = orders.customer_id WITHIN 5s;", SOURCES, inputs, dialect="lenses")
    assert sorted(v["name"] + ":" + str(v["item"]) for _, v in out) == ["Frank:Computer", "John:None"]
