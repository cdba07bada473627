"""Shared by the validation tests: case-style source definitions, and a rejected statement's
error checked for its rule, message words and position (file, line 1, the highlighted text)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.plan.catalog import Catalog
from streamjoin.dialect import StreamJoinError
from streamjoin.plan import plan_program


def source(name, kind, key, columns, partitions=1, timestamp=None, **extra) -> dict:
    return {"name": name, "kind": kind, "topic": name, "partitions": partitions, "key": key,
            "columns": columns, "timestamp": timestamp, **extra}


@dataclass
class Rejected:
    flavour: str
    sql: str
    rule: str
    words: str  # must appear in the message (case-insensitive)
    highlight: str  # the text the error points at (starts there)


def assert_rejected(case: Rejected, catalog: Catalog) -> StreamJoinError:
    with pytest.raises(StreamJoinError) as caught:
        plan_program(case.sql, catalog, case.flavour, file="q.sql")
    error = caught.value
    assert error.rule == case.rule, str(error)
    assert case.words.lower() in error.reason.lower(), str(error)
    assert error.file == "q.sql" and error.line == 1, str(error)
    assert case.sql[error.col - 1:].startswith(case.highlight), (error.col, str(error))
    assert "^" in error.snippet and str(error).startswith(f"q.sql:1:{error.col}: [{case.rule}]")
    return error
