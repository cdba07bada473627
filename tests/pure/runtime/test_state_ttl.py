"""Flink `SET 'table.exec.state.ttl'`: a regular join forgets rows older than the TTL (event
time), so a late match no longer joins, and the expiry is counted."""

from __future__ import annotations

import pytest

from streamjoin.runner.cases import Case
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case

SOURCES = [{"name": name, "kind": "stream", "topic": name, "partitions": 1, "key": [],
            "columns": {key: "STRING", value: "STRING"}, "timestamp": None}
           for name, key, value in (("A", "id", "v"), ("B", "bid", "w"))]
#   t=0 s   A(x, a1)
#   t=60 s  B(x, b1)   joins: 60 s < TTL either way
#   t=200 s B(x, b2)   joins only without a TTL of 90 s (A's row was written at 0 s)
INPUTS = [{"source": "A", "ts": 0, "key": None, "value": {"id": "x", "v": "a1"}},
          {"source": "B", "ts": 60_000, "key": None, "value": {"bid": "x", "w": "b1"}},
          {"source": "B", "ts": 200_000, "key": None, "value": {"bid": "x", "w": "b2"}}]


@pytest.mark.parametrize("ttl, joined", [(None, ["b1", "b2"]), ("'90 s'", ["b1"])])
def test_state_ttl_expires_rows(ttl, joined):
    setting = f"SET 'table.exec.state.ttl' = {ttl}; " if ttl else ""
    case = Case.from_json({"id": f"ttl {ttl}", "dialect": "flink", "compare": "multiset", "settings": {},
                           "sql": setting + "SELECT v, w FROM A JOIN B ON A.id = B.bid;",
                           "sources": SOURCES, "inputs": INPUTS, "expected": []})
    (records,) = run_locally(case, plan_case(case, "t.")).values()
    assert [r.value["w"] for r in records] == joined
