"""Scalar SQL functions. Names are case-insensitive: sqlglot parses the common ones into typed
nodes (LEN/LENGTH/CHAR_LENGTH -> Length, SUBSTR/SUBSTRING -> Substring, IFNULL/NVL -> Coalesce,
LTRIM/RTRIM -> Trim, UCASE -> Upper, ...); the rest arrive as `exp.Anonymous` and are looked up
by name in `NAMED_FUNCTIONS`. Flavour differences (SUBSTR indexing, CONCAT with NULL) follow
`scope.options` (ExprOptions); docs/functions.md lists every function.

Extend with `@compiles(exp.SomeFunc)` for a sqlglot node class or `@named("NAME")` for a name.
"""

from __future__ import annotations

from typing import Any, Callable

from sqlglot import exp

from streamjoin.expr.core import Env, Evaluator, ExpressionError, compile_node, compiles, strict
from streamjoin.serde.java_time import format_millis, parse_millis
from streamjoin.expr.values import (
    ceil_number,
    ceil_timestamp,
    floor_number,
    floor_timestamp,
    round_half_up,
    to_millis,
    to_sql_string,
)

NamedCompiler = Callable[[list[Evaluator], exp.Expression, Any], Evaluator]
NAMED_FUNCTIONS: dict[str, NamedCompiler] = {}


def named(*names: str) -> Callable[[NamedCompiler], NamedCompiler]:
    def register(compiler: NamedCompiler) -> NamedCompiler:
        for name in names:
            NAMED_FUNCTIONS[name.upper()] = compiler
        return compiler

    return register


@compiles(exp.Anonymous)
def _by_name(node: exp.Anonymous, scope) -> Evaluator:
    compiler = NAMED_FUNCTIONS.get(node.name.upper())
    if compiler is None:
        raise ExpressionError(f"unknown function {node.name}: docs/functions.md lists the functions there are",
                              node, rule="unknown-function")
    return compiler([compile_node(arg, scope) for arg in node.expressions], node, scope)


def _arguments(node: exp.Expression, scope, *names: str) -> list[Evaluator]:
    """The compiled arguments present among `names` (optional ones may be absent)."""
    return [compile_node(node.args[name], scope) for name in names if node.args.get(name) is not None]


# ---- strings ------------------------------------------------------------------------------


@compiles(exp.Length)
def _length(node: exp.Length, scope) -> Evaluator:
    """LEN / LENGTH / CHAR_LENGTH: characters of a string (or elements of an array)."""
    return strict(len, compile_node(node.this, scope))


@compiles(exp.ArraySize)
def _array_size(node: exp.ArraySize, scope) -> Evaluator:
    return strict(len, compile_node(node.this, scope))


@named("CARDINALITY", "SIZE", "ARRAY_LENGTH")
def _cardinality(args: list[Evaluator], node, scope) -> Evaluator:
    arity(node, args, 1, 1)
    return strict(len, *args)


def substring_from_one(text: str, start: int, length: int | None = None) -> str:
    """ksqlDB / Flink / s-Server SUBSTRING(s, pos[, len]): pos counts from 1; a negative pos
    counts from the end (ksqlDB); pos 0 acts as 1; len < 1 gives ''."""
    begin = start - 1 if start > 0 else max(len(text) + start, 0) if start < 0 else 0
    if length is None:
        return text[begin:]
    return text[begin : begin + length] if length > 0 else ""


def substring_from_zero(text: str, start: int, end: int | None = None) -> str:
    """Lenses SUBSTR(s, start[, end]): Java's substring, zero-based, `end` exclusive; indexes
    past the end are clamped (Lenses' own example: SUBSTR(email, 10, 20) on a 17-char email)."""
    begin = max(start, 0)
    return text[begin:] if end is None else text[begin : max(end, begin)]


@compiles(exp.Substring)
def _substring(node: exp.Substring, scope) -> Evaluator:
    zero_based = scope.options.zero_based_substring or bool(node.args.get("zero_start"))
    cut = substring_from_zero if zero_based else substring_from_one
    args = [compile_node(node.this, scope)] + _arguments(node, scope, "start", "length")
    if len(args) < 2:
        raise ExpressionError("SUBSTRING needs a start position", node)
    return strict(lambda s, *bounds: cut(to_sql_string(s), *bounds), *args)


@compiles(exp.Upper)
def _upper(node: exp.Upper, scope) -> Evaluator:
    return strict(str.upper, compile_node(node.this, scope))


@compiles(exp.Lower)
def _lower(node: exp.Lower, scope) -> Evaluator:
    return strict(str.lower, compile_node(node.this, scope))


@compiles(exp.Trim)
def _trim(node: exp.Trim, scope) -> Evaluator:
    """TRIM([BOTH|LEADING|TRAILING] [chars] FROM s), LTRIM, RTRIM; chars default to spaces."""
    position = (node.args.get("position") or "BOTH").upper()
    strip = {"BOTH": str.strip, "LEADING": str.lstrip, "TRAILING": str.rstrip}[position]
    value = compile_node(node.this, scope)
    if node.args.get("expression") is None:
        return strict(lambda s: strip(s, " "), value)
    return strict(strip, value, compile_node(node.expression, scope))


@compiles(exp.Concat)
def _concat(node: exp.Concat, scope) -> Evaluator:
    """CONCAT(a, b, ...): non-strings are converted. ksqlDB treats a NULL argument as ''
    (its docs); Flink, Lenses and s-Server return NULL when any argument is NULL."""
    parts = [compile_node(arg, scope) for arg in node.expressions]
    if scope.options.concat_skips_nulls or node.args.get("coalesce"):
        return lambda env: "".join(to_sql_string(v) for v in (p(env) for p in parts) if v is not None)
    return strict(lambda *values: "".join(map(to_sql_string, values)), *parts)


# ---- numbers and timestamps ---------------------------------------------------------------


@compiles(exp.Abs)
def _abs(node: exp.Abs, scope) -> Evaluator:
    return strict(abs, compile_node(node.this, scope))


def _rounding(number_fn: Callable[[Any], Any], time_fn: Callable[[int, str], int]) -> Callable:
    def compiler(node: exp.Expression, scope) -> Evaluator:
        """FLOOR(x) / CEIL(x) keep x's type; FLOOR(ts TO HOUR) (s-Server, Flink) truncates a
        timestamp to the unit (SECOND, MINUTE, HOUR, DAY, MONTH, YEAR)."""
        value = compile_node(node.this, scope)
        if node.args.get("decimals") is not None:
            raise ExpressionError(f"{type(node).__name__.upper()} takes no scale argument", node)
        unit = node.args.get("to")
        if unit is None:
            return strict(number_fn, value)
        try:
            time_fn(0, unit.name)  # reject an unknown unit now, not on the first row
        except ValueError as err:
            raise ExpressionError(str(err), node) from None
        return strict(lambda ts: time_fn(to_millis(ts), unit.name), value)

    return compiler


compiles(exp.Floor)(_rounding(floor_number, floor_timestamp))
compiles(exp.Ceil)(_rounding(ceil_number, ceil_timestamp))


@compiles(exp.Round)
def _round(node: exp.Round, scope) -> Evaluator:
    """ROUND(x[, digits]): halves round away from zero."""
    return strict(round_half_up, *_arguments(node, scope, "this", "decimals"))


@named("TIMESTAMPTOSTRING")
def _timestamp_to_string(args: list[Evaluator], node, scope) -> Evaluator:
    """ksqlDB TIMESTAMPTOSTRING(epoch millis, Java pattern[, time zone]) -> text."""
    arity(node, args, 2, 3)
    return strict(lambda millis, pattern, *tz: format_millis(to_millis(millis), pattern, *tz), *args)


@named("STRINGTOTIMESTAMP")
def _string_to_timestamp(args: list[Evaluator], node, scope) -> Evaluator:
    """ksqlDB STRINGTOTIMESTAMP(text, Java pattern[, time zone]) -> epoch millis."""
    arity(node, args, 2, 3)
    return strict(parse_millis, *args)


# ---- NULL handling ------------------------------------------------------------------------


@compiles(exp.Coalesce)
def _coalesce(node: exp.Coalesce, scope) -> Evaluator:
    """COALESCE / IFNULL / NVL: the first non-NULL argument; later ones are not evaluated."""
    args = [compile_node(node.this, scope)] + [compile_node(a, scope) for a in node.expressions]

    def evaluate(env: Env) -> Any:
        for arg in args:
            value = arg(env)
            if value is not None:
                return value
        return None

    return evaluate


@compiles(exp.Nullif)
def _nullif(node: exp.Nullif, scope) -> Evaluator:
    value, other = compile_node(node.this, scope), compile_node(node.expression, scope)

    def evaluate(env: Env) -> Any:
        x = value(env)
        return None if x is not None and x == other(env) else x

    return evaluate


@named("AS_VALUE")
def _as_value(args: list[Evaluator], node, scope) -> Evaluator:
    """ksqlDB AS_VALUE(key column): the value itself; as an expression (not a column reference) it
    is a value column, never taken for the result key."""
    arity(node, args, 1, 1)
    return args[0]


# ---- arrays -------------------------------------------------------------------------------


def flatten_once(arrays: list) -> list | None:
    """Lenses flatten: an array of arrays -> one array, one level deep, in order. A NULL inner
    array makes the result NULL (Spark's flatten); a non-array element is kept as it is."""
    flat: list = []
    for inner in arrays:
        if inner is None:
            return None
        if isinstance(inner, list):
            flat.extend(inner)
        else:
            flat.append(inner)
    return flat


@compiles(exp.Flatten)
def _flatten(node: exp.Flatten, scope) -> Evaluator:
    return strict(flatten_once, compile_node(node.this, scope))


def arity(node: exp.Expression, args: list, low: int, high: int) -> None:
    if not low <= len(args) <= high:
        expected = str(low) if low == high else f"{low} to {high}"
        raise ExpressionError(f"{node.name.upper()} takes {expected} argument(s), got {len(args)}", node,
                              rule="function-arguments")
