"""PARTITION BY as ksqlDB's partitioning doc says: the expression becomes the key; a NULL key
row goes to any partition (keyless); COALESCE gives such rows a default key instead."""

from __future__ import annotations

import pytest

from streamjoin.runner.cases import Case
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case

PRODUCTS = [{"source": "products", "ts": 1000 * i, "key": None, "value": {"product_id": pid, "name": n}}
            for i, (pid, n) in enumerate([("p1", "scooter"), (None, "mystery"), ("p2", "kite")])]


def rekey(expression: str) -> Case:
    return Case.from_json({
        "id": expression, "dialect": "ksqldb", "compare": "ordered", "settings": {},
        "sql": f"CREATE STREAM rekeyed WITH (PARTITIONS=3) AS SELECT * FROM products PARTITION BY {expression};",
        "sources": [{"name": "products", "kind": "stream", "topic": "products", "partitions": 1, "key": [],
                     "columns": {"product_id": "STRING", "name": "STRING"}, "timestamp": None}],
        "inputs": PRODUCTS, "expected": []})


@pytest.mark.parametrize("expression, keys", [
    ("product_id", ["p1", None, "p2"]),
    ("COALESCE(product_id, 'unknown')", ["p1", "unknown", "p2"]),
])
def test_partition_by_keys(expression, keys):
    case = rekey(expression)
    planned = plan_case(case, "t.")
    (records,) = run_locally(case, planned).values()
    records = sorted(records, key=lambda r: r.ts)  # read back partition by partition
    assert [r.key for r in records] == keys
    assert [r.value["NAME"] for r in records] == ["scooter", "mystery", "kite"]
    assert planned.topic_partitions["t.REKEYED"] == 3
