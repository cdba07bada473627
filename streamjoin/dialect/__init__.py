"""Parsing: SQL text in one of the four flavours -> sqlglot statements (see dialect.py)."""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from streamjoin.dialect import flavours
from streamjoin.dialect.dialect import FlinkDialect, LensesDialect, StreamJoin
from streamjoin.dialect.errors import StreamJoinError, span
from streamjoin.dialect.flavours import FLAVOURS, Flavour
from streamjoin.dialect.nodes import (
    CreateRelation, Duration, SetOption, SourceColumn, SourceTable, StreamQuery, ViewDefinition,
    Watermark, WindowTableFunction, Within,
)

_FLAVOUR_COMMENT = re.compile(r"^\s*--\s*dialect\s*:\s*(\w+)", re.I)


def dialect_for(flavour: str | Flavour):
    """The sqlglot dialect that parses `flavour` (a name or a Flavour)."""
    return flavours.flavour(flavour).dialect


def declared_flavour(sql: str, default: str = "ksqldb") -> str:
    """The flavour named in a first-line comment `-- dialect: flink`, else `default`."""
    match = _FLAVOUR_COMMENT.match(sql.split("\n", 1)[0])
    return match.group(1).lower() if match else default


def parse(sql: str, flavour: str | Flavour = "ksqldb", file: str | None = None) -> list[exp.Expr]:
    """All statements of `sql` (empty statements dropped); syntax errors as StreamJoinError."""
    dialect = dialect_for(flavour)
    try:
        return [s for s in dialect.parse(sql) if s is not None]
    except ParseError as error:
        detail = error.errors[0] if error.errors else {}
        start = _offset(sql, detail.get("line"), detail.get("col"))
        highlight = detail.get("highlight") or ""
        end = start + max(len(highlight) - 1, 0) if start is not None else None
        if start is not None and highlight:
            start = max(0, end - len(highlight) + 1)
        message = (detail.get("description") or str(error)).split("\n")[0]
        raise StreamJoinError(message, "syntax", sql=sql, file=file, start=start, end=end) from None
    except TokenError as error:
        raise StreamJoinError(str(error), "syntax", sql=sql, file=file) from None


def _offset(sql: str, line: int | None, col: int | None) -> int | None:
    if not line or not col:
        return None
    lines = sql.split("\n")
    return sum(len(l) + 1 for l in lines[: line - 1]) + col - 1


__all__ = [
    "FLAVOURS", "CreateRelation", "Duration", "FlinkDialect", "Flavour", "LensesDialect", "SetOption", "SourceColumn",
    "SourceTable", "StreamJoin", "StreamJoinError", "StreamQuery", "ViewDefinition",
    "Watermark", "WindowTableFunction", "Within", "declared_flavour", "dialect_for", "parse", "span",
]
