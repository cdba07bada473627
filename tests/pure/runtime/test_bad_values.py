"""One bad value never stops a task: a record that cannot be decoded, evaluated or encoded comes
out as a dead letter (`Rejected`, with where and why), counted, and the next record flows on."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from streamjoin.runner.cases import Case as SqlCase
from streamjoin.runner.planned import plan_case
from streamjoin.runtime.contract import Emitted, InputRow, Rejected
from streamjoin.serde.formats import decode

SETUP = ["CREATE STREAM views (id STRING KEY, pageid STRING, viewtime BIGINT) "
         "WITH (kafka_topic='views', value_format='JSON', partitions=1);"]
DEEP = b'{"pageid": "p", "viewtime": 1, "extra": ' + b"[" * 5000 + b"]" * 5000 + b"}"


def value(pageid: str, viewtime: int) -> bytes:
    return json.dumps({"pageid": pageid, "viewtime": viewtime}).encode()


@dataclass(frozen=True)
class Case:
    name: str
    sql: str
    values: tuple[bytes, ...]  # the values of views' records, one per offset
    expected: tuple  # per result: ("out", value row) or ("dead", a fragment of the reason)
    flavour: str = "ksqldb"


CASES = [
    # offset 0: 5,000 nested arrays (Python's JSON decoder recurses) -> dead letter; offset 1 flows.
    Case("deep JSON", "CREATE STREAM out AS SELECT id, pageid FROM views EMIT CHANGES;",
         (DEEP, value("p2", 2)),
         (("dead", "views[0]@0: nested too deeply"), ("out", {"PAGEID": "p2"}))),
    # 1000 * 10^17 = 10^20 does not fit BIGINT: that result is a dead letter, the next one fits.
    Case("BIGINT overflow", "CREATE STREAM out AS SELECT id, viewtime * 100000000000000000 AS big FROM views "
         "EMIT CHANGES;", (value("p", 1000), value("p", 1)),
         (("dead", "out of range for BIGINT"), ("out", {"BIG": 10**17}))),
    # A string plus a number fails while evaluating the filter: the record is a dead letter whose
    # reason names the expression and its position (a STRING column plus a number is rejected
    # when planned, `arithmetic-types`; a function's result is typed only when it runs).
    Case("string + number", "CREATE STREAM out AS SELECT id, pageid FROM views WHERE UCASE(pageid) + 1 > 2 "
         "EMIT CHANGES;", (value("p", 1),),
         (("dead", "views[0]@0: evaluation failed: cannot evaluate `UPPER(views.PAGEID) + 1 > 2` (line 1, col 57)"),)),
    # A value that does not decode at all, then a good one.
    Case("not JSON", "CREATE STREAM out AS SELECT id, pageid FROM views EMIT CHANGES;",
         (b"{not json", value("p3", 3)),
         (("dead", "views[0]@0: value: not valid JSON"), ("out", {"PAGEID": "p3"}))),
]


def run(case: Case) -> tuple[list[tuple], dict]:
    sql_case = SqlCase.from_json({"id": case.name, "dialect": case.flavour, "setup": SETUP, "sql": case.sql,
                                  "inputs": [], "expected": []})
    (query,) = plan_case(sql_case, "").queries
    runtime = query.factory(0)
    results = []
    for offset, raw in enumerate(case.values):
        for item in runtime.process(InputRow("views", 0, offset, 1_000 * offset, b"k", raw)):
            if isinstance(item, Rejected):
                results.append(("dead", item.reason))
            else:
                assert isinstance(item, Emitted)
                results.append(("out", decode(query.sink_serde, item.key, item.value, item.ts).value))
    return results, runtime.counters()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_bad_value_is_a_dead_letter_and_the_task_goes_on(case):
    results, counters = run(case)
    assert len(results) == len(case.expected), results
    for (kind, got), (want_kind, want) in zip(results, case.expected):
        assert kind == want_kind, results
        if kind == "dead":
            assert want in got, got
        else:
            assert {k: v for k, v in got.items() if k in want} == want
    assert counters["output_records"] == sum(1 for kind, _ in case.expected if kind == "out")
    assert counters["input_records"] == len(case.values)  # those that failed to decode too
