"""Compares a keyed (table) result changelog with a conformance case's `expected`.

The README's rule for updating results: `expected` lists each emitted new value (INSERT /
UPDATE_AFTER) and each tombstone (`value` null) in emission order; retractions (UPDATE_BEFORE)
are not listed. `ts` and `key` are compared where the expected records carry them.
"""

from __future__ import annotations

import json
from collections import Counter

from tests.pure.operators.conformance_inputs import Projection, case_records, conformance_case
from streamjoin.operators.base import END_OF_TIME, Change, JoinProcessor, RowKind, Side


def _normalized(record: dict, ts_asserted: bool, key_asserted: bool) -> tuple:
    value = record["value"]
    if value is not None:  # column names compare case-insensitively
        value = tuple(sorted((name.upper(), json.dumps(v)) for name, v in value.items()))
    return (record["ts"] if ts_asserted else None, record["key"] if key_asserted else None, value)


def assert_keyed_output(case: dict, changes: list[Change], project: Projection) -> None:
    listed = [c for c in changes if c.kind is not RowKind.UPDATE_BEFORE]
    actual = [
        {"ts": c.ts, "key": c.key,
         "value": None if c.kind is RowKind.DELETE else project(c.left, c.right)}
        for c in listed
    ]
    ts_asserted = all("ts" in e for e in case["expected"])
    key_asserted = all("key" in e for e in case["expected"])
    want = [_normalized(e, ts_asserted, key_asserted) for e in case["expected"]]
    got = [_normalized(a, ts_asserted, key_asserted) for a in actual]
    if case["compare"] == "ordered":
        assert got == want
    else:
        assert Counter(got) == Counter(want)


def run_keyed_case(case_id: str, processor: JoinProcessor, sides: dict[str, Side],
                   project: Projection, join_column: dict[str, str] | None = None) -> list[Change]:
    case = conformance_case(case_id)
    changes = processor.process_all(case_records(case, sides, join_column))
    if case["settings"].get("flush_at_end"):
        changes += processor.advance_to(END_OF_TIME)
    assert_keyed_output(case, changes, project)
    return changes
