"""Lenses `INSERT INTO t STORE KEY AS f VALUE AS f`: the bytes written are in the named storage
formats (a primitive is Kafka's serializer of that type, the bare value); `expression AS _key`
makes the expression the records' key. End to end in-process."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.runner.cases import Case as RunnerCase
from streamjoin.runner.local import local_records
from streamjoin.runner.planned import plan_case
from tests.pure.runtime.sql_case import row, run_sql, source

ORDERS = [source("orders", {"_key": "INT", "customer_id": "INT", "item": "STRING"}, key=["_key"], kind="stream")]
INPUTS = [row("orders", 1000, {"customer_id": 1, "item": "Computer"}, key=7)]  # order 7 of customer 1


@dataclass(frozen=True)
class Case:
    store: str  # the STORE clause
    select: str
    key: bytes
    value: bytes


CASES = [
    Case("STORE KEY AS INT VALUE AS STRING", "item", b"\x00\x00\x00\x07", b"Computer"),
    Case("STORE VALUE AS INT", "customer_id", b"\x00\x00\x00\x07", b"\x00\x00\x00\x01"),
    Case("STORE VALUE AS JSON", "item, customer_id", b"\x00\x00\x00\x07", b'{"item":"Computer","customer_id":1}'),
    Case("STORE KEY AS JSON", "item", b"7", b'{"item":"Computer"}'),
    Case("STORE KEY AS STRING", "item AS _key, customer_id", b"Computer", b'{"customer_id":1}'),
    Case("STORE VALUE AS JSON", "_key, item", b"\x00\x00\x00\x07", b'{"item":"Computer"}'),  # the key facet
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.store)
def test_the_result_is_written_in_the_stored_formats(case: Case):
    sql = f"INSERT INTO out {case.store} SELECT STREAM {case.select} FROM orders;"
    run = RunnerCase.from_json({"id": "store", "dialect": "lenses", "sql": sql, "sources": ORDERS, "inputs": INPUTS,
                                "setup": [], "settings": {"flush_at_end": True}})
    [record] = local_records(run, plan_case(run, topic_prefix="t."))["t.out"]
    assert (record.key, record.value) == (case.key, case.value)


def test_a_projected_key_rekeys_the_stream():
    # The Lenses document's LATERAL example keeps each batch's key; `meter_id AS _key` keys each
    # reading by its meter instead (the document: "projecting on the key ... `expression AS _key`").
    sources = [source("batched_readings", {"_key": "STRING", "meter_id": "INT", "readings": "ARRAY<INT>"},
                      key=["_key"], kind="stream")]
    inputs = [row("batched_readings", 1000, {"meter_id": 1, "readings": [100, 80, 95]}, key="a"),
              row("batched_readings", 2000, {"meter_id": 2, "readings": [93]}, key="b")]
    sql = ("INSERT INTO readings SELECT STREAM meter_id AS _key, reading FROM batched_readings "
           "LATERAL readings AS reading WHERE reading > 90;")
    assert run_sql(sql, sources, inputs, dialect="lenses") == [(1, {"reading": 100}), (1, {"reading": 95}),
                                                               (2, {"reading": 93})]


CUSTOMERS = source("customers", {"_key": "INT", "id": "INT", "name": "STRING"}, key=["_key"])
VIEWS = "WITH c AS (SELECT TABLE * FROM customers);\n"


@pytest.mark.parametrize("view, expected", [
    # a view that filters and projects keeps the order's key (7): the join finds customer 7
    ("WITH v AS (SELECT STREAM item FROM orders WHERE customer_id > 0);", [(7, {"item": "Computer", "name": "Ann"})]),
    # a view keyed by the customer id: the join finds customer 1 on that key
    ("WITH v AS (SELECT STREAM customer_id AS _key, item FROM orders);", [(1, {"item": "Computer", "name": "Bob"})]),
])
def test_a_view_with_a_projection_joins_on_its_key(view, expected):
    # customers 1 (Bob) and 7 (Ann), then order 7 of customer 1 and order 8 of customer 0
    inputs = [row("customers", 500, {"id": 1, "name": "Bob"}, key=1), row("customers", 600, {"id": 7, "name": "Ann"}, key=7),
              *INPUTS, row("orders", 1100, {"customer_id": 0, "item": "Mouse"}, key=8)]
    sql = f"{view}\n{VIEWS}INSERT INTO out SELECT STREAM v.item, c.name FROM v JOIN c;"
    assert run_sql(sql, [*ORDERS, CUSTOMERS], inputs, dialect="lenses") == expected


def test_a_view_with_a_projection_is_read_whole():
    sql = "WITH v AS (SELECT STREAM item FROM orders WHERE customer_id > 0);\nINSERT INTO out SELECT STREAM * FROM v;"
    assert run_sql(sql, ORDERS, INPUTS, dialect="lenses") == [(7, {"item": "Computer"})]
