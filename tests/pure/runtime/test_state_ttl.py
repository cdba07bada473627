"""Flink `SET 'table.exec.state.ttl'` and the STATE_TTL hint (per input): a regular join forgets
rows older than the TTL (event time), so a late match no longer joins, and the expiry is counted."""

from __future__ import annotations

import pytest

from streamjoin.dialect import StreamJoinError
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


@pytest.mark.parametrize("hint, joined", [
    ("/*+ STATE_TTL('A' = '90 s') */", ["b1"]),  # A's row expires at 90 s: b2 finds nothing
    ("/*+ STATE_TTL('B' = '90 s') */", ["b1", "b2"]),  # only B's rows expire: A's stays
    ("/*+ STATE_TTL('a' = '1d'), BROADCAST(B) */", ["b1", "b2"]),  # aliases fold case; strategy hints ignored
    ("/*+ SHUFFLE_HASH(A) */", ["b1", "b2"]),
])
def test_state_ttl_hint_per_input(hint, joined):
    case = Case.from_json({"id": hint, "dialect": "flink", "sql": f"SELECT {hint} v, w FROM A JOIN B ON A.id = B.bid",
                           "sources": SOURCES, "inputs": INPUTS})
    (records,) = run_locally(case, plan_case(case, "h.")).values()
    assert [r.value["w"] for r in records] == joined


@pytest.mark.parametrize("dialect, hint, message", [
    ("flink", "/*+ STATE_TTL('C' = '1d') */", "does not read"),
    ("flink", "/*+ STATE_TTL('A' = 'soon') */", "must be a duration"),
    ("flink", "/*+ LOOKUP('table'='B') */", "unknown hint"),
    ("ksqldb", "/*+ BROADCAST(B) */", "not supported in ksqldb"),
])
def test_bad_hints_are_rejected(dialect, hint, message):
    case = Case.from_json({"id": hint, "dialect": dialect, "sql": f"SELECT {hint} v, w FROM A JOIN B ON A.id = B.bid",
                           "sources": SOURCES})
    with pytest.raises(StreamJoinError) as error:
        plan_case(case, "h.")
    assert error.value.rule == "hint" and message in error.value.reason
