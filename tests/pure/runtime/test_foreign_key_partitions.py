"""A foreign-key join over several partitions: orders (3 partitions, keyed by orderId) reference
customers (2 partitions, keyed by customerId). No partitioning puts an order and its customer in
the same task, so every task reads the customers topic whole (`CompiledQuery.broadcast_topics`);
the result must be the single-partition result, change for change.

    ts    input                      INNER result (key orderId: AMOUNT, NAME)
    1000  customer 1 Ann
    1001  customer 2 Bob
    1002  customer 3 Cid
    2000  order 1 -> 1, 10           1: 10 Ann
    2001  order 2 -> 2, 20           2: 20 Bob
    2002  order 3 -> 1, 30           3: 30 Ann
    2003  order 4 -> 9, 40           -            (customer 9 does not exist yet)
    3000  customer 1 Ann B           1: 10 Ann B, 3: 30 Ann B   (fan-out across tasks)
    4000  order 2 -> 3, 21           2: 21 Cid    (the FK moved: the old association is gone)
    5000  customer 2 Bobby           -            (nobody references 2 any more)
    6000  customer 9 Nine            4: 40 Nine
    7000  customer 3 tombstone       2: tombstone
    8000  order 1 tombstone          1: tombstone
"""

from __future__ import annotations

import pytest

from streamjoin.runner.cases import Case
from streamjoin.runner.compare import compare
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case

SQL = ("SELECT o.orderId, o.amount, c.name FROM orders o JOIN customers c "
       "ON o.customerId = c.customerId EMIT CHANGES;")


def customer(ts: int, key: int, name: str | None) -> dict:
    return {"source": "customers", "ts": ts, "key": key, "value": None if name is None else {"name": name}}


def order(ts: int, key: int, customer_id: int | None = None, amount: int | None = None) -> dict:
    value = None if customer_id is None else {"customerId": customer_id, "amount": amount}
    return {"source": "orders", "ts": ts, "key": key, "value": value}


INPUTS = [
    customer(1000, 1, "Ann"), customer(1001, 2, "Bob"), customer(1002, 3, "Cid"),
    order(2000, 1, 1, 10), order(2001, 2, 2, 20), order(2002, 3, 1, 30), order(2003, 4, 9, 40),
    customer(3000, 1, "Ann B"), order(4000, 2, 3, 21), customer(5000, 2, "Bobby"),
    customer(6000, 9, "Nine"), customer(7000, 3, None), order(8000, 1),
]


def result(ts: int, key: int, amount: int | None = None, name: str | None = None) -> dict:
    return {"ts": ts, "key": key, "value": None if amount is None else {"AMOUNT": amount, "NAME": name}}


EXPECTED = [
    result(2000, 1, 10, "Ann"), result(2001, 2, 20, "Bob"), result(2002, 3, 30, "Ann"),
    result(3000, 1, 10, "Ann B"), result(3000, 3, 30, "Ann B"), result(4000, 2, 21, "Cid"),
    result(6000, 4, 40, "Nine"), result(7000, 2), result(8000, 1),
]


def fk_case(case_id: str, order_partitions: int, customer_partitions: int) -> Case:
    return Case.from_json({
        "id": case_id, "dialect": "ksqldb", "sql": SQL, "compare": "multiset", "settings": {},
        "sources": [
            {"name": "orders", "kind": "table", "topic": "orders", "partitions": order_partitions,
             "key": ["orderId"], "columns": {"orderId": "INT", "customerId": "INT", "amount": "INT"},
             "timestamp": None},
            {"name": "customers", "kind": "table", "topic": "customers", "partitions": customer_partitions,
             "key": ["customerId"], "columns": {"customerId": "INT", "name": "STRING"}, "timestamp": None}],
        "inputs": INPUTS, "expected": EXPECTED})


@pytest.mark.parametrize("orders, customers", [(1, 1), (3, 2), (2, 5)])
def test_foreign_key_join_result_does_not_depend_on_partitioning(orders, customers):
    case = fk_case(f"fk.{orders}x{customers}", orders, customers)
    planned = plan_case(case, topic_prefix="local.")
    (query,) = planned.queries
    assert query.broadcast_topics == {"local.customers"}
    outputs = run_locally(case, planned)
    (expected,) = planned.expected_by_topic(case.expected).values()
    assert compare(expected, outputs[query.sink.topic], ordered=False) is None
