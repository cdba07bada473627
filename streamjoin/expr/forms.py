"""Compilers for the SQL forms that make values: literals, CASE / IF, CAST, array literals,
array and map subscripts, struct field access.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from sqlglot import exp

from streamjoin.expr.core import Env, Evaluator, ExpressionError, compile_node, compiles, constant, strict
from streamjoin.expr.ops import COMPARISONS
from streamjoin.expr.values import cast_function, struct_field

# ---- leaves -------------------------------------------------------------------------------


@compiles(exp.Literal)
def _literal(node: exp.Literal, scope) -> Evaluator:
    """Strings stay strings; integers are int; 1.5 is an exact DECIMAL, 1e3 an approximate
    DOUBLE (the SQL standard's literal types, followed by ksqlDB and Flink)."""
    text = node.this
    if node.is_string:
        return constant(text)
    if "e" in text.lower():
        return constant(float(text))
    return constant(Decimal(text) if "." in text else int(text))


@compiles(exp.Boolean)
def _boolean(node: exp.Boolean, scope) -> Evaluator:
    return constant(bool(node.this))


@compiles(exp.Null)
def _null(node: exp.Null, scope) -> Evaluator:
    return constant(None)


@compiles(exp.Paren, exp.Alias)
def _inner(node: exp.Expression, scope) -> Evaluator:
    return compile_node(node.this, scope)


@compiles(exp.Interval)
def _bare_interval(node: exp.Interval, scope) -> Evaluator:
    raise ExpressionError("an INTERVAL is only allowed added to or subtracted from a timestamp", node,
                          rule="interval")


WINDOW_FUNCTIONS = "window functions (... OVER (...)) are not supported: aggregate with GROUP BY instead"


@compiles(exp.Window)
def _window(node: exp.Window, scope) -> Evaluator:
    raise ExpressionError(WINDOW_FUNCTIONS, node, rule="window-function")


# ---- conditionals -------------------------------------------------------------------------


@compiles(exp.Case)
def _case(node: exp.Case, scope) -> Evaluator:
    """Searched CASE takes the first WHEN that is TRUE; simple CASE x WHEN v compares x = v
    (a NULL x matches nothing). No match and no ELSE: NULL."""
    branches = [(compile_node(b.this, scope), compile_node(b.args["true"], scope)) for b in node.args["ifs"]]
    default = compile_node(node.args["default"], scope) if node.args.get("default") else constant(None)
    if node.this is not None:
        subject, equal = compile_node(node.this, scope), COMPARISONS[exp.EQ]
        branches = [(strict(equal, subject, when), then) for when, then in branches]

    def evaluate(env: Env) -> Any:
        for when, then in branches:
            if when(env) is True:
                return then(env)
        return default(env)

    return evaluate


@compiles(exp.If)
def _if(node: exp.If, scope) -> Evaluator:
    """IF(condition, then[, else])."""
    condition, then = compile_node(node.this, scope), compile_node(node.args["true"], scope)
    otherwise = compile_node(node.args["false"], scope) if node.args.get("false") else constant(None)
    return lambda env: then(env) if condition(env) is True else otherwise(env)


# ---- casts --------------------------------------------------------------------------------


@compiles(exp.Cast, exp.TryCast)
def _cast(node: exp.Cast, scope) -> Evaluator:
    """A value CAST cannot convert is NULL where the flavour says so (`cast_failure_is_null`:
    ksqlDB), else an error naming it, which rejects the record to the dead letters (Flink fails
    the job); TRY_CAST always yields NULL."""
    convert = cast_function(node.to, scope.is_timestamp(node.this), node)
    value = compile_node(node.this, scope)
    forgiving = (isinstance(node, exp.TryCast) or bool(node.args.get("safe"))
                 or scope.options.cast_failure_is_null)
    target = node.to.sql()

    def evaluate(env: Env) -> Any:
        x = value(env)
        if x is None:
            return None
        try:
            return convert(x)
        except (ValueError, TypeError, ArithmeticError) as err:
            if forgiving:
                return None
            raise ExpressionError(f"cannot cast {x!r} to {target} ({err})", node) from None

    return evaluate


# ---- arrays, subscripts, struct fields ----------------------------------------------------


@compiles(exp.Array)
def _array(node: exp.Array, scope) -> Evaluator:
    items = [compile_node(i, scope) for i in node.expressions]
    return lambda env: [item(env) for item in items]


@compiles(exp.Bracket)
def _subscript(node: exp.Bracket, scope) -> Evaluator:
    """array[i] counts from `array_index_base` (1 by default: ksqlDB, Flink); a negative index
    counts from the end (ksqlDB); out of range is NULL. map[key] looks the key up."""
    if len(node.expressions) != 1:
        raise ExpressionError("a subscript takes exactly one index", node)
    base = scope.options.array_index_base

    def element(container: Any, index: Any) -> Any:
        if isinstance(container, dict):
            return container.get(index)
        if not isinstance(index, int):
            raise TypeError(f"array index {index!r} is not an integer")
        position = index if index < 0 else index - base
        if -len(container) <= position < len(container) and (index < 0 or index >= base):
            return container[position]
        return None

    return strict(element, compile_node(node.this, scope), compile_node(node.expressions[0], scope))


@compiles(exp.Dot)
def _dot(node: exp.Dot, scope) -> Evaluator:
    """A struct field (ksqlDB `s->f`, or `a.b.c.d` past a column's parts); `s->*` is expanded
    by the planner."""
    if isinstance(node.expression, exp.Star):
        raise ExpressionError("struct->* is not a value; the planner expands it", node)
    field = node.expression.name
    return strict(lambda value: struct_field(value, field), compile_node(node.this, scope))
