"""Scope types are `SqlType`s: type strings are parsed once, `static_type` answers a SqlType
(timestamps as plain TIMESTAMP(3), CAST targets by name) or None when only the data tells."""

from __future__ import annotations

import pytest
import sqlglot

from streamjoin.dialect.types import ANY, TIMESTAMP, TypeSyntaxError, parse_type
from streamjoin.dialect.flavours import flavour
from streamjoin.expr.compile import ExprOptions, Scope

SCOPE = Scope({
    "t": {"a": "INT", "d": "DECIMAL(10, 2)", "ts": "TIMESTAMP_LTZ(6)", "p": "TIMESTAMP_LTZ(3) PROCTIME",
          "st": parse_type("STRUCT<x INT>"), "j": ANY, "u": None},
    "r": ["q"],
}, ExprOptions.of(flavour("sqlstream")))  # ROWTIME a TIMESTAMP (ksqlDB's is BIGINT millis)


@pytest.mark.parametrize("sql, expected", [
    ("a", "INT"), ("d", "DECIMAL(10, 2)"), ("st", "STRUCT<x INT>"), ("j", "ANY"),
    ("ts", "TIMESTAMP(3)"), ("p", "TIMESTAMP(3)"), ("ROWTIME", "TIMESTAMP(3)"), ("(ts)", "TIMESTAMP(3)"),
    ("ts + INTERVAL '1' HOUR", "TIMESTAMP(3)"), ("FLOOR(ts TO HOUR)", "TIMESTAMP(3)"),
    ("CAST(a AS VARCHAR)", "STRING"), ("CAST(a AS DECIMAL(10, 2))", "DECIMAL(10, 0)"),
    ("CAST(a AS TIMESTAMP(6))", "TIMESTAMP(3)"), ("TRY_CAST(a AS BIGINT)", "BIGINT"),
    ("st.x", None), ("u", None), ("q", None), ("a + 1", None), ("CAST(a AS DATE)", None), ("nope", None),
])
def test_static_type(sql: str, expected: str | None) -> None:
    kind = SCOPE.static_type(sqlglot.parse_one(sql))
    assert kind == (None if expected is None else parse_type(expected))


def test_declared_strings_are_parsed_once() -> None:
    assert SCOPE.relations["t"]["ts"] == parse_type("TIMESTAMP_LTZ(6)")
    assert SCOPE.resolve(["ROWTIME"]).type == TIMESTAMP
    assert Scope(SCOPE.relations).relations == SCOPE.relations
    with pytest.raises(TypeSyntaxError):
        Scope({"t": {"a": "NOT A TYPE"}})
