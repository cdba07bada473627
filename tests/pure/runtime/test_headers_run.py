"""Record headers end to end in process (plan, compile, decode, join, project, encode): header
columns read what the input record carries, and every result carries the headers of the record
whose processing emitted it (as Kafka Streams forwards them), never the engine's replay header.
Each `Case`: ksqlDB setup + query, inputs (topic, ts, key, value, headers), the expected output
(key, value, headers); header values are bytes here, base64 in the case format and in JSON."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pytest

from streamjoin.runner.cases import Case as SuiteCase
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case
from streamjoin.runtime.contract import REPLAY_HEADER

B64 = {b: base64.b64encode(b).decode() for b in (b"!", b"#", b"x", b"y", b"replay")}
STREAMS = ["CREATE STREAM L (A INT KEY, B INT, C BYTES HEADER('abc')) WITH (kafka_topic='LEFT', value_format='JSON');",
           ("CREATE STREAM R (A INT KEY, B INT, H ARRAY<STRUCT<KEY STRING, VALUE BYTES>> HEADERS) "
            "WITH (kafka_topic='RIGHT', value_format='JSON');")]
TABLES = ["CREATE TABLE LT (A INT PRIMARY KEY, B INT, C BYTES HEADER('abc')) WITH (kafka_topic='LT', value_format='JSON');",
          "CREATE TABLE RT (A INT PRIMARY KEY, D INT) WITH (kafka_topic='RT', value_format='JSON');"]
WIDE = ["CREATE STREAM W (ID INT KEY, FK INT, C BYTES HEADER('abc')) WITH (kafka_topic='W', partitions=2);",
        "CREATE TABLE T (ID INT PRIMARY KEY, N STRING) WITH (kafka_topic='T', partitions=2);"]


@dataclass(frozen=True)
class Case:
    setup: list
    sql: str
    inputs: list  # (topic, ts, key, value, headers as ((key, bytes), ...))
    expected: list  # (key, value, headers)


def rec(topic, ts, key, value, headers=()):
    return {"topic": topic, "ts": ts, "key": key, "value": value,
            "headers": [{"key": k, "value": None if v is None else base64.b64encode(v).decode()} for k, v in headers]}


CASES = {
    # L 0@10 {abc: !}; R 0@11 {def: #} -> one result, emitted processing R: R's headers
    "stream-stream: header columns, the result carries the right record's headers": Case(
        STREAMS, "CREATE STREAM OUT AS SELECT * FROM L JOIN R WITHIN 10 SECONDS ON L.A = R.A;",
        [rec("LEFT", 10, 0, {"B": 1}, [("abc", b"!")]), rec("RIGHT", 11, 0, {"B": -1}, [("def", b"#")])],
        [(0, {"L_B": 1, "L_C": B64[b"!"], "R_A": 0, "R_B": -1, "R_H": [{"KEY": "def", "VALUE": B64[b"#"]}]},
          (("def", b"#"),))]),
    # a record without headers: HEADER('abc') is NULL, HEADERS empty, the result carries none
    "no headers": Case(
        STREAMS, "CREATE STREAM OUT AS SELECT L.A, L.C, R.H FROM L JOIN R WITHIN 10 SECONDS ON L.A = R.A;",
        [rec("RIGHT", 10, 0, {"B": 1}), rec("LEFT", 11, 0, {"B": 2})],
        [(0, {"C": None, "H": []}, ())]),
    # the engine's replay header on an input (a topic streamjoin wrote) is never passed on
    "the replay header stays behind": Case(
        STREAMS, "CREATE STREAM OUT AS SELECT L.A, L.C FROM L JOIN R WITHIN 10 SECONDS ON L.A = R.A;",
        [rec("RIGHT", 10, 0, {"B": 1}), rec("LEFT", 11, 0, {"B": 2}, [(REPLAY_HEADER, b"replay"), ("abc", b"x")])],
        [(0, {"C": B64[b"x"]}, (("abc", b"x"),))]),
    # table-table: each result carries the headers of the update that caused it
    "table-table: the headers of the triggering update": Case(
        TABLES, "CREATE TABLE OUT AS SELECT LT.A, LT.C, RT.D FROM LT JOIN RT ON LT.A = RT.A;",
        [rec("LT", 1, 0, {"B": 1}, [("abc", b"x")]), rec("RT", 2, 0, {"D": 5}, [("r", b"#")]),
         rec("LT", 3, 0, {"B": 2}, [("abc", b"y")])],
        [(0, {"C": B64[b"x"], "D": 5}, (("r", b"#"),)), (0, {"C": B64[b"y"], "D": 5}, (("abc", b"y"),))]),
    # a stream re-keyed through an internal topic (2 partitions): the header column travels in
    # the internal topic's value, and the headers with the record
    "repartitioned: header columns survive the internal topic": Case(
        WIDE, "CREATE STREAM OUT AS SELECT W.FK, W.C, T.N FROM W JOIN T ON W.FK = T.ID;",
        [rec("T", 1, 7, {"N": "seven"}), rec("W", 2, 1, {"FK": 7}, [("abc", b"!")])],
        [(7, {"C": B64[b"!"], "N": "seven"}, (("abc", b"!"),))]),
}


@pytest.mark.parametrize("name", CASES)
def test_headers(name):
    case = CASES[name]
    suite_case = SuiteCase.from_json({"id": name, "dialect": "ksqldb", "sql": case.sql, "setup": case.setup,
                                      "inputs": case.inputs})
    planned = plan_case(suite_case, topic_prefix="t.")
    records = run_locally(suite_case, planned)[planned.sink_topics[-1]]
    assert [(r.key, r.value, r.headers) for r in sorted(records, key=lambda r: r.ts)] == case.expected
