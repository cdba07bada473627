"""Date and time functions of Flink SQL (docs/functions.md): TO_TIMESTAMP, TO_TIMESTAMP_LTZ,
DATE_FORMAT and QUARTER. Formats are Java date patterns, as Flink writes them
('yyyy-MM-dd HH:mm:ss.SSS'); timestamps are epoch milliseconds, wall clock in UTC."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

from sqlglot import exp

from streamjoin.dialect.types import TIMESTAMP, parse_type
from streamjoin.expr.core import RESULT_TYPES, Evaluator, ExpressionError, compile_node, compiles, strict
from streamjoin.expr.functions import arity, named
from streamjoin.expr.values import parse_timestamp, to_millis
from streamjoin.serde.time import datetime_to_millis, millis_to_datetime

# Java pattern letter runs -> strftime directives; a run of S is the fraction of a second.
_PATTERN = re.compile(r"'[^']*'|y+|M+|d+|H+|m+|s+|S+|[^yMdHmsS']+")
_DIRECTIVES = {"y": "%Y", "M": "%m", "d": "%d", "H": "%H", "m": "%M", "s": "%S"}


def _parts(pattern: str) -> list[str]:
    return _PATTERN.findall(pattern)


def format_millis(millis: int, pattern: str) -> str:
    """DATE_FORMAT: `millis` written with a Java date pattern ('yyyy-MM-dd HH:mm:ss.SSS')."""
    moment = millis_to_datetime(millis)
    out = []
    for part in _parts(pattern):
        if part.startswith("'"):
            out.append(part[1:-1])
        elif part[0] == "S":
            out.append(f"{moment.microsecond:06d}"[: len(part)].ljust(len(part), "0"))
        elif part[0] == "y" and len(part) == 2:
            out.append(moment.strftime("%y"))
        elif part[0] in _DIRECTIVES:
            out.append(moment.strftime(_DIRECTIVES[part[0]]))
        else:
            out.append(part)
    return "".join(out)


def parse_millis(text: str, pattern: str) -> int:
    """TO_TIMESTAMP(text, pattern): `text` read with a Java date pattern -> epoch millis (UTC)."""
    directives = []
    for part in _parts(pattern):
        if part.startswith("'"):
            directives.append(part[1:-1].replace("%", "%%"))
        elif part[0] == "S":
            directives.append("%f")
        elif part[0] == "y" and len(part) == 2:
            directives.append("%y")
        else:
            directives.append(_DIRECTIVES.get(part[0], part.replace("%", "%%")))
    moment = datetime.strptime(text.strip(), "".join(directives)).replace(tzinfo=timezone.utc)
    return datetime_to_millis(moment)


@named("TO_TIMESTAMP")
def _to_timestamp(args: list[Evaluator], node, scope) -> Evaluator:
    """TO_TIMESTAMP(s[, pattern]): 'yyyy-MM-dd HH:mm:ss[.SSS]' by default -> a timestamp."""
    arity(node, args, 1, 2)
    if len(args) == 1:
        return strict(parse_timestamp, *args)
    return strict(parse_millis, *args)


@named("TO_TIMESTAMP_LTZ")
def _to_timestamp_ltz(args: list[Evaluator], node, scope) -> Evaluator:
    """TO_TIMESTAMP_LTZ(epoch, precision): epoch seconds (precision 0) or millis (3) -> an instant."""
    arity(node, args, 1, 2)
    precision = node.expressions[1] if len(node.expressions) == 2 else exp.Literal.number(3)
    if not isinstance(precision, exp.Literal) or precision.name not in ("0", "3"):
        raise ExpressionError("TO_TIMESTAMP_LTZ precision must be 0 (seconds) or 3 (milliseconds)", node)
    scale = 1000 if precision.name == "0" else 1

    def convert(epoch: Any) -> int:
        return int(Decimal(str(epoch)) * scale)

    return strict(convert, args[0])


@named("DATE_FORMAT")
def _date_format(args: list[Evaluator], node, scope) -> Evaluator:
    """DATE_FORMAT(timestamp, pattern) -> the timestamp as text, in a Java date pattern."""
    arity(node, args, 2, 2)
    return strict(lambda ts, pattern: format_millis(to_millis(ts), pattern), *args)


@compiles(exp.Quarter)
def _quarter(node: exp.Quarter, scope) -> Evaluator:
    """QUARTER(date or timestamp) -> 1..4."""
    return strict(lambda ts: (millis_to_datetime(to_millis(ts)).month - 1) // 3 + 1, compile_node(node.this, scope))


RESULT_TYPES.update({"TO_TIMESTAMP": TIMESTAMP, "TO_TIMESTAMP_LTZ": parse_type("TIMESTAMP_LTZ(3)")})
