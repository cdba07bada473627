"""Compilers for SQL operators: three-valued logic, comparisons, IN, BETWEEN, LIKE, IS,
arithmetic (with timestamp +/- INTERVAL) and string concatenation.

NULL rules: comparisons and arithmetic with a NULL operand are NULL; AND/OR/NOT follow Kleene
logic (FALSE AND NULL = FALSE, TRUE OR NULL = TRUE, NOT NULL = NULL).
"""

from __future__ import annotations

import operator
import re
from functools import lru_cache
from typing import Any, Callable

from sqlglot import exp

from streamjoin.expr.core import Env, Evaluator, ExpressionError, compile_node, compiles, constant, strict
from streamjoin.expr.values import (
    add,
    aligned,
    divide,
    interval_millis,
    modulo,
    multiply,
    parse_timestamp,
    subtract,
    to_millis,
    to_sql_string,
)

# ---- three-valued logic -------------------------------------------------------------------


def and3(a: bool | None, b: bool | None) -> bool | None:
    """SQL AND: FALSE if either is false, else NULL if either is NULL, else TRUE."""
    if (a is not None and not a) or (b is not None and not b):
        return False
    return None if a is None or b is None else True


@compiles(exp.And)
def _and(node: exp.And, scope) -> Evaluator:
    left, right = compile_node(node.this, scope), compile_node(node.expression, scope)

    def evaluate(env: Env) -> bool | None:
        a = left(env)
        if a is not None and not a:  # FALSE AND anything: the right side is not evaluated
            return False
        return and3(a, right(env))

    return evaluate


@compiles(exp.Or)
def _or(node: exp.Or, scope) -> Evaluator:
    left, right = compile_node(node.this, scope), compile_node(node.expression, scope)

    def evaluate(env: Env) -> bool | None:
        a = left(env)
        if a:
            return True
        b = right(env)
        if b:
            return True
        return None if a is None or b is None else False

    return evaluate


@compiles(exp.Not)
def _not(node: exp.Not, scope) -> Evaluator:
    return strict(operator.not_, compile_node(node.this, scope))


# ---- comparisons --------------------------------------------------------------------------


def _comparing(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], bool]:
    def compare(a: Any, b: Any) -> bool:
        if type(a) is not type(b):
            a, b = aligned(a, b)
        return op(a, b)

    return compare


COMPARISONS = {
    exp.EQ: _comparing(operator.eq),
    exp.NEQ: _comparing(operator.ne),
    exp.GT: _comparing(operator.gt),
    exp.GTE: _comparing(operator.ge),
    exp.LT: _comparing(operator.lt),
    exp.LTE: _comparing(operator.le),
}


def compile_operand(node: exp.Expression, other: exp.Expression, scope) -> Evaluator:
    """An operand compared with `other`: a string literal facing a TIMESTAMP is parsed now, so
    `ts > '2019-03-30 05:03:30'` compares millis with millis."""
    if isinstance(node, exp.Literal) and node.is_string and scope.is_timestamp(other):
        return constant(parse_timestamp(node.this))
    return compile_node(node, scope)


@compiles(*COMPARISONS)
def _comparison(node: exp.Binary, scope) -> Evaluator:
    left = compile_operand(node.this, node.expression, scope)
    right = compile_operand(node.expression, node.this, scope)
    return strict(COMPARISONS[type(node)], left, right)


@compiles(exp.NullSafeEQ, exp.NullSafeNEQ)
def _null_safe(node: exp.Binary, scope) -> Evaluator:
    """IS [NOT] DISTINCT FROM: NULL equals NULL, never NULL."""
    left, right = compile_node(node.this, scope), compile_node(node.expression, scope)
    equal = COMPARISONS[exp.EQ]
    want = isinstance(node, exp.NullSafeEQ)

    def evaluate(env: Env) -> bool:
        a, b = left(env), right(env)
        same = (a is None and b is None) or (a is not None and b is not None and equal(a, b))
        return same is want

    return evaluate


@compiles(exp.Between)
def _between(node: exp.Between, scope) -> Evaluator:
    value = compile_node(node.this, scope)
    low = compile_operand(node.args["low"], node.this, scope)
    high = compile_operand(node.args["high"], node.this, scope)
    ge, le = COMPARISONS[exp.GTE], COMPARISONS[exp.LTE]

    def evaluate(env: Env) -> bool | None:
        x = value(env)
        if x is None:
            return None
        lo, hi = low(env), high(env)
        return and3(None if lo is None else ge(x, lo), None if hi is None else le(x, hi))

    return evaluate


@compiles(exp.In)
def _in(node: exp.In, scope) -> Evaluator:
    if node.args.get("query") is not None or node.args.get("unnest") is not None:
        raise ExpressionError("IN with a subquery is not supported: list the values, IN (1, 2, 3)", node, rule="subquery")
    value = compile_node(node.this, scope)
    items = node.expressions
    equal = COMPARISONS[exp.EQ]
    if items and all(isinstance(i, exp.Literal) for i in items):
        members = frozenset(compile_operand(i, node.this, scope)(None) for i in items)
        return strict(lambda x: x in members, value)  # literals are never NULL
    candidates = [compile_operand(i, node.this, scope) for i in items]

    def evaluate(env: Env) -> bool | None:
        x = value(env)
        if x is None:
            return None
        saw_null = False
        for candidate in candidates:
            y = candidate(env)
            if y is None:
                saw_null = True
            elif equal(x, y):
                return True
        return None if saw_null else False

    return evaluate


@compiles(exp.Is)
def _is(node: exp.Is, scope) -> Evaluator:
    """IS NULL / IS TRUE / IS FALSE: never NULL themselves."""
    value, target = compile_node(node.this, scope), node.expression
    if isinstance(target, exp.Null):
        test = lambda env: value(env) is None  # noqa: E731
    elif isinstance(target, exp.Boolean):
        truth = bool(target.this)
        test = lambda env: value(env) is truth  # noqa: E731
    else:
        raise ExpressionError("IS expects NULL, TRUE or FALSE", node)
    if node.args.get("negate"):
        return lambda env: not test(env)
    return test


def like_regex(pattern: str, escape: str | None, ignore_case: bool) -> re.Pattern:
    """LIKE pattern -> regex: % any run, _ one character, `escape` quotes the next character."""
    parts, chars = [], iter(pattern)
    for char in chars:
        if escape is not None and char == escape:
            parts.append(re.escape(next(chars, "")))
        elif char == "%":
            parts.append(".*")
        elif char == "_":
            parts.append(".")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.DOTALL | (re.IGNORECASE if ignore_case else 0))


@compiles(exp.Like, exp.ILike, exp.Escape)
def _like(node: exp.Expression, scope) -> Evaluator:
    escape = None
    if isinstance(node, exp.Escape):
        escape, node = node.expression.name, node.this
    ignore_case = isinstance(node, exp.ILike)
    value, pattern = compile_node(node.this, scope), node.expression
    if isinstance(pattern, exp.Literal) and pattern.is_string:
        regex = like_regex(pattern.this, escape, ignore_case)
        matches = strict(lambda s: regex.fullmatch(s) is not None, value)
    else:
        cached = lru_cache(maxsize=256)(lambda p: like_regex(p, escape, ignore_case))
        matches = strict(lambda s, p: cached(p).fullmatch(s) is not None, value, compile_node(pattern, scope))
    if node.args.get("negate"):
        return strict(operator.not_, matches)
    return matches


# ---- arithmetic ---------------------------------------------------------------------------

ARITHMETIC = {exp.Add: add, exp.Sub: subtract, exp.Mul: multiply, exp.Div: divide, exp.Mod: modulo}


@compiles(*ARITHMETIC)
def _arithmetic(node: exp.Binary, scope) -> Evaluator:
    if isinstance(node.expression, exp.Interval) and isinstance(node, (exp.Add, exp.Sub)):
        millis = interval_millis(node.expression)
        delta = millis if isinstance(node, exp.Add) else -millis
        return strict(lambda ts: to_millis(ts) + delta, compile_node(node.this, scope))
    if isinstance(node.this, exp.Interval) and isinstance(node, exp.Add):
        millis = interval_millis(node.this)
        return strict(lambda ts: to_millis(ts) + millis, compile_node(node.expression, scope))
    left, right = compile_node(node.this, scope), compile_node(node.expression, scope)
    return strict(ARITHMETIC[type(node)], left, right)


@compiles(exp.Neg)
def _negate(node: exp.Neg, scope) -> Evaluator:
    return strict(operator.neg, compile_node(node.this, scope))


@compiles(exp.DPipe)
def _pipes(node: exp.DPipe, scope) -> Evaluator:
    """a || b: NULL if either is NULL (standard SQL, Flink); non-strings are converted."""
    return strict(
        lambda a, b: to_sql_string(a) + to_sql_string(b),
        compile_node(node.this, scope),
        compile_node(node.expression, scope),
    )
