"""Date and time functions of Flink SQL (docs/functions.md): TO_TIMESTAMP, TO_TIMESTAMP_LTZ,
DATE_FORMAT and QUARTER. Formats are Java date patterns, as Flink writes them
('yyyy-MM-dd HH:mm:ss.SSS'), read by the one reader of them (serde.java_time); timestamps are
epoch milliseconds, wall clock in UTC."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlglot import exp

from streamjoin.dialect.types import TIMESTAMP, parse_type
from streamjoin.expr.core import RESULT_TYPES, Evaluator, ExpressionError, compile_node, compiles, strict
from streamjoin.expr.functions import arity, named
from streamjoin.expr.values import parse_timestamp, to_millis
from streamjoin.serde.java_time import format_millis, parse_millis
from streamjoin.serde.time import millis_to_datetime


@named("TO_TIMESTAMP")
def _to_timestamp(args: list[Evaluator], node, scope) -> Evaluator:
    """TO_TIMESTAMP(s[, pattern]): 'yyyy-MM-dd HH:mm:ss[.SSS]' by default -> a timestamp."""
    arity(node, args, 1, 2)
    if len(args) == 1:
        return strict(parse_timestamp, *args)
    return strict(_parse_with_pattern, *args)


def _parse_with_pattern(text: str, pattern: str) -> int:
    """Text read with its Java pattern; text the pattern does not match is read in the default
    form, as Flink falls back to JDBC's timestamp reading ('... 05:03:30.25' with 'ss.SSS')."""
    try:
        return parse_millis(text, pattern)
    except ValueError:
        return parse_timestamp(text)


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
