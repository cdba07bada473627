"""Runs one conformance case's inputs through a pure operator and compares with its `expected`.

The case JSON is read from ../shared/conformance at test time (never copied into the project).
Each test states by hand what the compiler would: which source is which side, which column is the
join key, how a result row is projected.
"""

from __future__ import annotations

import functools
import json
from collections import Counter
from typing import Callable

from streamjoin.operators.base import END_OF_TIME, Change, JoinProcessor, Record, Row, Side
from tests.paths import CONFORMANCE


Projection = Callable[[Row | None, Row | None], dict]


@functools.cache
def _all_cases() -> dict[str, dict]:
    cases = {}
    for path in sorted(CONFORMANCE.glob("*.json")):
        for case in json.loads(path.read_text())["cases"]:
            cases[case["id"]] = case
    return cases


def conformance_case(case_id: str) -> dict:
    return _all_cases()[case_id]


def case_records(case: dict, sides: dict[str, Side], join_column: dict[str, str] | None = None) -> list[Record]:
    """The case's inputs as Records in arrival order: value = the value map plus the source's key
    columns; key = the input key, or the value's `join_column[source]` where the source's key is
    not the join key (a missing column is a null key)."""
    sources = {source["name"]: source for source in case["sources"]}
    join_column = join_column or {}
    records = []
    for seq, item in enumerate(case["inputs"]):
        name = item["source"]
        value = item["value"]
        if value is not None:
            key_columns = sources[name]["key"]
            value = {**value, **({key_columns[0]: item["key"]} if len(key_columns) == 1 else {})}
        if name in join_column:
            key = None if value is None else value.get(join_column[name])
        else:
            key = item["key"]
        records.append(Record(sides[name], key, value, item["ts"], seq))
    return records


def _normalized(ts: int | None, value: dict) -> tuple:
    return ts, tuple(sorted((name.upper(), json.dumps(v)) for name, v in value.items()))


def run_and_compare(case_id: str, processor: JoinProcessor, sides: dict[str, Side], project: Projection,
                    join_column: dict[str, str] | None = None,
                    records: list[Record] | None = None,
                    where: Callable[[Change], bool] | None = None) -> list[Change]:
    """Feed the case's inputs (or `records` derived from them), flush if the case says so, keep
    the changes passing `where` (a WHERE applied after the join), and assert the projected output
    equals `expected` (ordered or multiset, ts where given)."""
    case = conformance_case(case_id)
    changes = processor.process_all(records if records is not None else case_records(case, sides, join_column))
    if case["settings"].get("flush_at_end"):
        changes += processor.advance_to(END_OF_TIME)
    if where is not None:
        changes = [c for c in changes if where(c)]
    expected = [_normalized(e.get("ts"), e["value"]) for e in case["expected"]]
    actual = [_normalized(c.ts, project(c.left, c.right)) for c in changes]
    if case["compare"] == "ordered":
        # An expected row without ts does not assert the ts of the row at its position.
        actual = [(None if want[0] is None else got[0], got[1]) for got, want in zip(actual, expected)] \
            + actual[len(expected):]
        assert actual == expected
    else:
        if any(ts is None for ts, _ in expected):  # multiset with unasserted ts: values only
            expected, actual = [(None, v) for _, v in expected], [(None, v) for _, v in actual]
        assert Counter(actual) == Counter(expected)
    return changes


def column(row: Row | None, name: str):
    """SQL projection of `row.name`: NULL for a null-padded side."""
    return None if row is None else row.get(name)
