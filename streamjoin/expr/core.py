"""The machinery `streamjoin.expr.compile` is built on: the error type, the node-class dispatch table and
the NULL-propagation helpers every operator and function uses.

An expression compiles once into an `Evaluator` (a closure `env -> value`); evaluating it never
walks the sqlglot tree again. Each node class has one compiler, registered with `@compiles`:

    @compiles(exp.Upper)
    def _upper(node, scope):
        return strict(str.upper, compile_node(node.this, scope))

New node classes (e.g. the dialect's custom nodes) are supported by registering a compiler, from
any module, before the expression is compiled.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from sqlglot import exp

Env = Mapping[str, "Mapping[str, Any] | None"]
Evaluator = Callable[[Env], Any]
Compiler = Callable[[exp.Expression, Any], Evaluator]

COMPILERS: dict[type[exp.Expression], Compiler] = {}
# Named functions whose result type does not depend on their arguments (name -> SqlType), so a
# projection of one is typed before any row: TO_TIMESTAMP(...) is a TIMESTAMP column.
RESULT_TYPES: dict[str, Any] = {}


class ExpressionError(ValueError):
    """An expression that cannot be compiled or evaluated; the message names the expression text
    and, when the parser recorded it, its line and column. `reason` is the message alone, `node`
    the expression and `rule` the validation rule a compile-time error reports (the compile step
    turns it into a positioned StreamJoinError)."""

    def __init__(self, message: str, node: exp.Expression | None = None, rule: str = "expression"):
        self.reason, self.node, self.rule = message, node, rule
        if node is not None:
            message = f"{message} in `{sql_text(node)}`{position_suffix(node)}"
        super().__init__(message)


def sql_text(node: exp.Expression) -> str:
    try:
        return node.sql()
    except Exception:  # a custom node without a generator still gets a readable name
        return repr(node)


def position_suffix(node: exp.Expression) -> str:
    """' (line L, col C)': where the expression's text starts, from the parser's position meta
    (sqlglot records it on identifiers, literals and function names, not on operators)."""
    metas = [sub.meta for sub in node.walk() if "line" in (sub.meta or {})]
    if not metas:
        return ""
    first = min(metas, key=lambda meta: meta.get("start", 0))
    return f" (line {first['line']}, col {first['col'] - (first['end'] - first['start'])})"


def compiles(*node_classes: type[exp.Expression]) -> Callable[[Compiler], Compiler]:
    def register(compiler: Compiler) -> Compiler:
        for node_class in node_classes:
            COMPILERS[node_class] = compiler
        return compiler

    return register


def compile_node(node: exp.Expression, scope: Any) -> Evaluator:
    """Compile one node with the compiler of its class (or of its nearest registered base)."""
    for node_class in type(node).__mro__:
        compiler = COMPILERS.get(node_class)
        if compiler is not None:
            return compiler(node, scope)
    raise ExpressionError(f"unsupported expression {type(node).__name__}", node, rule="unsupported-expression")


def constant(value: Any) -> Evaluator:
    return lambda env: value


def strict(fn: Callable[..., Any], *args: Evaluator) -> Evaluator:
    """`fn` applied to the arguments' values, NULL when any argument is NULL (SQL's rule for
    almost every operator and function). Unrolled for 1 and 2 arguments: this is the hot path."""
    if len(args) == 1:
        (a,) = args

        def strict1(env: Env) -> Any:
            x = a(env)
            return None if x is None else fn(x)

        return strict1
    if len(args) == 2:
        a, b = args

        def strict2(env: Env) -> Any:
            x = a(env)
            if x is None:
                return None
            y = b(env)
            return None if y is None else fn(x, y)

        return strict2

    def strict_n(env: Env) -> Any:
        values = []
        for arg in args:
            value = arg(env)
            if value is None:
                return None
            values.append(value)
        return fn(*values)

    return strict_n


def reads_column(evaluator: Evaluator, alias: str, column: str) -> Evaluator:
    """Note on `evaluator` that it only reads `column` of relation `alias` (NULL for a NULL
    row): a caller evaluating many rows may then read the column itself (`column_read`)."""
    evaluator.column_read = (alias, column)
    return evaluator


def column_read(evaluator: Evaluator) -> tuple[str, str] | None:
    """(alias, column) when `evaluator` only reads that column (`reads_column`), else None."""
    return getattr(evaluator, "column_read", None)


def guarded(evaluator: Evaluator, node: exp.Expression) -> Evaluator:
    """Turn a Python error raised while evaluating into an ExpressionError naming the expression.

    Only the outermost evaluator is wrapped: a try block costs nothing until it raises."""
    text, where = sql_text(node), position_suffix(node)

    def evaluate(env: Env) -> Any:
        try:
            return evaluator(env)
        except ExpressionError:
            raise
        except KeyError as missing:
            raise ExpressionError(
                f"cannot evaluate `{text}`{where}: the environment has no relation {missing}"
            ) from None
        except (TypeError, ValueError, ArithmeticError, IndexError) as err:
            raise ExpressionError(f"cannot evaluate `{text}`{where}: {err}") from err

    read = column_read(evaluator)
    return evaluate if read is None else reads_column(evaluate, *read)
