"""check-cases over the shared conformance files (read at test time, never copied), and the
runner's handling of the format's optional fields."""

from __future__ import annotations

import json

import pytest

from streamjoin.runner.cases import Case, load_cases
from streamjoin.cli import main
from streamjoin.cli.check_cases import check_case
from tests.paths import CONFORMANCE

SHARED_CASES = [c for c in load_cases([CONFORMANCE])] if CONFORMANCE.is_dir() else []


def test_conformance_directory_is_present():
    assert SHARED_CASES, f"no conformance cases found in {CONFORMANCE}"


@pytest.mark.parametrize("case", SHARED_CASES, ids=lambda c: c.id)
def test_shared_case_plans_or_is_rejected_as_expected(case):
    assert check_case(case) is None


def test_cli_prints_one_line_per_case_and_summary(tmp_path, capsys):
    cases = [
        {"id": "ok", "dialect": "ksqldb", "sql": "SELECT * FROM s;",
         "sources": [{"name": "s", "kind": "stream", "topic": "s", "partitions": 1, "key": [], "columns": {"a": "INT"}}]},
        {"id": "expects error but plans", "dialect": "ksqldb", "sql": "SELECT * FROM s;", "expect_error": {"contains": []},
         "sources": [{"name": "s", "kind": "stream", "topic": "s", "partitions": 1, "key": [], "columns": {"a": "INT"}}]},
    ]
    file = tmp_path / "cases.json"
    file.write_text(json.dumps({"cases": cases}))
    assert main(["check-cases", str(file)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "PASS ok"
    assert lines[1].startswith("FAIL expects error but plans: accepted")
    assert lines[-1] == "1 passed, 1 failed"


def test_setup_statements_build_the_catalog():
    case = Case.from_json({
        "id": "golden", "dialect": "ksqldb", "sources": [],
        "setup": ["CREATE STREAM l (id STRING KEY, v STRING) WITH (kafka_topic='l', value_format='json', partitions=1);",
                  "CREATE TABLE r (id STRING PRIMARY KEY, w STRING) WITH (kafka_topic='r', value_format='json', partitions=1);"],
        "sql": "CREATE STREAM a AS SELECT l.id AS k, v, w FROM l JOIN r ON l.id = r.id;\nCREATE STREAM b AS SELECT * FROM a;",
        "inputs": [{"topic": "l", "ts": 1, "key": "x", "value": {"v": "1"}, "headers": [{"key": "h", "value": "AA=="}]}],
        "expected": [{"topic": "B", "key": "x", "value": {"V": "1", "W": None}}, {"value": None}],
        "expected_schema": {"key": ["K"]},
    })
    assert check_case(case) is None
    record = case.inputs[0]
    assert (record.source, record.topic, record.headers) == (None, "l", ({"key": "h", "value": "AA=="},))
    present, absent = case.expected
    assert (present.has_key, present.key, present.has_ts, present.has_topic) == (True, "x", False, True)
    assert (absent.has_key, absent.value) == (False, None)


def test_expected_error_substrings_are_checked():
    case = Case.from_json({
        "id": "e", "dialect": "ksqldb", "sql": "SELECT * FROM l JOIN r ON l.id = r.id",
        "sources": [{"name": n, "kind": "stream", "topic": n, "partitions": 1, "key": ["id"], "columns": {"id": "STRING"}}
                    for n in ("l", "r")],
        "expect_error": {"contains": ["WITHIN", "no such words"]},
    })
    assert "no such words" in check_case(case)


@pytest.mark.parametrize("expect_error", [{"contains": ["unknown function NOSUCHFN"]}, None])
def test_what_fails_only_once_compiled_is_checked_too(expect_error):
    """An unknown function plans (the planner does not know functions) but does not compile."""
    case = Case.from_json({
        "id": "f", "dialect": "ksqldb", "sql": "SELECT NOSUCHFN(v) AS x FROM l;", "expect_error": expect_error,
        "sources": [{"name": "l", "kind": "stream", "topic": "l", "partitions": 1, "key": ["id"],
                     "columns": {"id": "STRING", "v": "STRING"}}],
    })
    reason = check_case(case)
    assert reason is None if expect_error else reason.startswith("rejected: 1:8: [unknown-function]")
