"""A join ON an ARRAY, MAP or STRUCT column: the key each side computes is made hashable, so the
stores can hold it (ksqlDB's `on ARRAY column` join test, in JSON)."""

from __future__ import annotations

import pytest

from streamjoin.runner.cases import Case
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case


@pytest.mark.parametrize("kind, left, right", [("ARRAY<INT>", [3, 1], [3, 1]),
                                               ("MAP<STRING, INT>", {"a": 1}, {"a": 1}),
                                               ("STRUCT<A INT>", {"A": 1}, {"A": 1})])
def test_a_stream_stream_join_on_a_nested_column(kind, left, right):
    case = Case.from_json({
        "id": "nested", "dialect": "ksqldb",
        "setup": [f"CREATE STREAM L (ID STRING KEY, L0 {kind}, L1 INT) WITH (kafka_topic='l', format='JSON');",
                  f"CREATE STREAM R (ID STRING KEY, R0 {kind}, R1 INT) WITH (kafka_topic='r', format='JSON');"],
        "sql": "CREATE STREAM OUT AS SELECT L.L0, L1, R1 FROM L JOIN R WITHIN 11 SECONDS ON L.L0 = R.R0;",
        "inputs": [{"topic": "l", "ts": 0, "key": "a", "value": {"L0": left, "L1": 1}},
                   {"topic": "r", "ts": 10, "key": "b", "value": {"R0": right, "R1": 2}}]})
    out = run_locally(case, plan_case(case, topic_prefix=""))["OUT"]
    assert [(r.key, r.value) for r in out] == [(left, {"L1": 1, "R1": 2})]
