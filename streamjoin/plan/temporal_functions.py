"""Flink's temporal table functions, declared in SQL. Flink registers one through its Table API
(`ratesHistory.createTemporalTableFunction($("rowtime"), $("currency"))`, then
`createTemporarySystemFunction("Rates", rates)`); a `sql/` folder says the same in one statement:

    CREATE [TEMPORARY] FUNCTION Rates AS RatesHistory.createTemporalTableFunction(rowtime, currency);

the history table, its time attribute (event time: its WATERMARK column; processing time: its
`AS PROCTIME()` column) and its primary key. `LATERAL TABLE (Rates(o.rowtime))` then reads the
version of each key valid at that time (plan.relations.temporal_function_input)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from streamjoin.plan.relations import table_name
from streamjoin.plan.scope import Context

_CALL = "createTemporalTableFunction"
_SHAPE = f"CREATE FUNCTION Rates AS RatesHistory.{_CALL}(time_attribute, primary_key)"


@dataclass(frozen=True)
class FunctionDeclaration:
    """A temporal table function a later statement (or the folder's queries) reads."""

    name: str
    spec: dict


def is_function_declaration(statement: exp.Expr) -> bool:
    return isinstance(statement, exp.Create) and (statement.args.get("kind") or "").upper() == "FUNCTION"


def declare_temporal_function(ctx: Context, create: exp.Create) -> FunctionDeclaration:
    """Checks the declaration against the catalog and registers it there."""
    if not ctx.flavour.temporal_table_functions:
        raise ctx.error("unsupported-statement", "CREATE FUNCTION declares a Flink temporal table function, "
                        "and this flavour has none: join the history table instead", create)
    call = create.expression
    method = call.expression if isinstance(call, exp.Dot) else None
    if not (isinstance(method, exp.Anonymous) and method.name.lower() == _CALL.lower()
            and isinstance(call.this, (exp.Identifier, exp.Column, exp.Table))):
        raise ctx.error("temporal-function", f"a function is declared as a temporal table function: {_SHAPE}",
                        call or create)
    if len(method.expressions) != 2:
        raise ctx.error("temporal-function", f"{_CALL} takes the time attribute and the primary key: {_SHAPE}",
                        method)
    history, view = ctx.catalog.get(call.this.name), ctx.catalog.views.get(call.this.name.lower())
    if view is not None:  # a view's columns are known once it is planned where the function is read
        return _register(ctx, create, view[0], *(arg.name for arg in method.expressions))
    if history is None:
        raise ctx.error("unknown-relation", f"unknown history table {call.this.name!r}: declare it (or a view) "
                        "before the function", call.this)
    time, key = (_column(ctx, history, arg) for arg in method.expressions)
    if time not in (history.timestamp, history.proctime):
        raise ctx.error("temporal-function", f"{time} is not a time attribute of {history.name}: give its "
                        "WATERMARK column (event time) or its `AS PROCTIME()` column (processing time)",
                        method.expressions[0])
    return _register(ctx, create, history.name, time, key)


def _register(ctx: Context, create: exp.Create, history: str, time: str, key: str) -> FunctionDeclaration:
    name = table_name(create.this)
    spec = {"name": name, "history_table": history, "time_attribute": time, "primary_key": key}
    ctx.catalog.temporal_functions[name.lower()] = spec
    return FunctionDeclaration(name, spec)


def _column(ctx: Context, history, arg: exp.Expr) -> str:
    name = arg.name if isinstance(arg, (exp.Column, exp.Identifier)) else None
    declared = next((c for c in history.columns if name and c.lower() == name.lower()), None)
    if declared is None:
        raise ctx.error("unknown-column", f"{arg.sql()} is not a column of {history.name}", arg)
    return declared
