"""ksqlDB joins its own tests run beyond the shared suites, in the conformance case format through
`streamjoin run-cases --local`: a stream-stream FULL OUTER join over out-of-order records with a
custom grace (Kafka Streams' window stores, the flavour's default), joins keyed by ARRAY, STRUCT
and MAP columns in a JSON key format, and a table-table join reading another query's table (a
chain of CREATE TABLE ... AS SELECT joins)."""

from __future__ import annotations

import json

import pytest

from streamjoin.cli import main

STREAMS = ["CREATE STREAM LEFT_STREAM (id BIGINT KEY, l1 VARCHAR) WITH (kafka_topic='left_topic', value_format='JSON');",
           "CREATE STREAM RIGHT_STREAM (id BIGINT KEY, l2 VARCHAR) WITH (kafka_topic='right_topic', value_format='JSON');"]


def _in(topic: str, ts: int, key, value: dict) -> dict:
    return {"topic": topic, "ts": ts, "key": key, "value": value}


def _out(topic: str, ts: int, key, value: dict) -> dict:
    return {"topic": topic, "ts": ts, "key": key, "value": value}


# WITHIN 1 min GRACE 1 min: each side's store keeps 3 min by its own largest ts. B@330 s moves the
# left side to 330 s: C@90 s is not kept, finds nothing and, its window long closed, is emitted at
# once; c@90 s and d@60 s are kept on the right (its time 90 s) and emitted alone at once for the
# same reason; D@90 s is not kept but still joins d. B's window is open at the end: nothing yet.
FULL_OUTER = {
    "id": "full outer join, out of order, custom grace", "dialect": "ksqldb", "setup": STREAMS,
    "sql": "CREATE STREAM OUTER_JOIN AS SELECT ROWKEY AS ID, l1, l2 FROM LEFT_STREAM t FULL OUTER JOIN RIGHT_STREAM tt "
           "WITHIN 1 MINUTE GRACE PERIOD 1 MINUTE ON t.id = tt.id;",
    "inputs": [_in("left_topic", 0, 0, {"L1": "A"}), _in("right_topic", 60_000, 0, {"L2": "a"}),
               _in("left_topic", 330_000, 1, {"L1": "B"}), _in("left_topic", 90_000, 2, {"L1": "C"}),
               _in("right_topic", 90_000, 2, {"L2": "c"}), _in("right_topic", 60_000, 3, {"L2": "d"}),
               _in("left_topic", 90_000, 3, {"L1": "D"})],
    "expected": [_out("OUTER_JOIN", 60_000, 0, {"L1": "A", "L2": "a"}),
                 _out("OUTER_JOIN", 90_000, 2, {"L1": "C", "L2": None}),
                 _out("OUTER_JOIN", 90_000, 2, {"L1": None, "L2": "c"}),
                 _out("OUTER_JOIN", 60_000, 3, {"L1": None, "L2": "d"}),
                 _out("OUTER_JOIN", 90_000, 3, {"L1": "D", "L2": "d"})],
}


def _complex_key(kind: str, sql_type: str, key, other) -> dict:
    """A stream-table join on a key column of `sql_type` in the JSON key format; the sink inherits
    the left source's formats, so its key is JSON too."""
    return {
        "id": f"{kind} key join", "dialect": "ksqldb",
        "setup": [f"CREATE STREAM L (K {sql_type} KEY, V STRING) WITH (kafka_topic='l', key_format='JSON', "
                  "value_format='JSON');",
                  f"CREATE TABLE R (K {sql_type} PRIMARY KEY, W STRING) WITH (kafka_topic='r', key_format='JSON', "
                  "value_format='JSON');"],
        "sql": "CREATE STREAM O AS SELECT L.K, V, W FROM L JOIN R ON L.K = R.K;",
        "inputs": [_in("r", 0, key, {"W": "w1"}), _in("l", 10, key, {"V": "v1"}), _in("l", 20, other, {"V": "v2"})],
        "expected": [_out("O", 10, key, {"V": "v1", "W": "w1"})],
    }


CTAS_CHAIN = {
    "id": "table-table join of another query's table", "dialect": "ksqldb",
    "setup": ["CREATE TABLE A (ID STRING PRIMARY KEY, X INT) WITH (kafka_topic='a', value_format='JSON');",
              "CREATE TABLE B (ID STRING PRIMARY KEY, Y INT) WITH (kafka_topic='b', value_format='JSON');",
              "CREATE TABLE C (ID STRING PRIMARY KEY, Z INT) WITH (kafka_topic='c', value_format='JSON');"],
    "sql": "CREATE TABLE AB AS SELECT A.ID AS ID, X, Y FROM A JOIN B ON A.ID = B.ID;\n"
           "CREATE TABLE ABC AS SELECT AB.ID AS ID, X, Y, Z FROM AB JOIN C ON AB.ID = C.ID;",
    "inputs": [_in("a", 0, "k", {"X": 1}), _in("b", 10, "k", {"Y": 2}), _in("c", 20, "k", {"Z": 3}),
               _in("b", 30, "k", {"Y": 4}), _in("a", 40, "k", None)],
    "expected": [_out("ABC", 20, "k", {"X": 1, "Y": 2, "Z": 3}), _out("ABC", 30, "k", {"X": 1, "Y": 4, "Z": 3}),
                 _out("ABC", 40, "k", None)],
}

CASES = [FULL_OUTER, _complex_key("ARRAY", "ARRAY<INT>", [1, 2], [3]),
         _complex_key("STRUCT", "STRUCT<A INT, B STRING>", {"A": 1, "B": "x"}, {"A": 2, "B": "y"}),
         _complex_key("MAP", "MAP<STRING, INT>", {"a": 1}, {"b": 2}), CTAS_CHAIN]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_case_runs_locally(case, tmp_path, capsys):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"cases": [case]}))
    status = main(["run-cases", str(path), "--local"])
    lines = capsys.readouterr().out.splitlines()
    assert (status, lines[-1]) == (0, "1 passed, 0 failed"), lines
