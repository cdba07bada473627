"""The correlated scalar subquery Flink's document writes for a temporal lookup before temporal
tables existed, read as the temporal join it means:

    FROM Orders AS o, RatesHistory AS r
    WHERE r.currency = o.currency
      AND r.rowtime = (SELECT MAX(rowtime) FROM RatesHistory AS r2
                       WHERE r2.currency = o.currency AND r2.rowtime <= o.rowtime)

picks, for each order, the history row of its currency with the latest time at or before the
order's: the version valid at o.rowtime. It is rewritten into `LATERAL TABLE (F(o.rowtime)) AS r`
over a temporal table function F (history RatesHistory, time rowtime, key currency) before the
statement is checked; any other correlated subquery stays the `subquery` error of plan.checks."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.dialect import parse
from streamjoin.plan.conditions import conjuncts
from streamjoin.plan.relations import table_name
from streamjoin.plan.scope import Context

_SHAPE = ("r.t = (SELECT MAX(t) FROM history AS r2 WHERE r2.k = o.k AND r2.t <= o.t), with r.k = o.k, "
          "or directly FROM o JOIN history FOR SYSTEM_TIME AS OF o.t AS r ON r.k = o.k")


def rewrite_temporal_lookups(ctx: Context, statement: exp.Expr) -> exp.Expr:
    if not ctx.flavour.temporal_table_functions:
        return statement
    for select in list(statement.find_all(exp.Select)):
        where = select.args.get("where")
        for conjunct in conjuncts(where.this) if where is not None else []:
            if isinstance(conjunct, exp.EQ) and isinstance(conjunct.expression.unnest(), exp.Select) \
                    and isinstance(conjunct.this, exp.Column) and conjunct.this.table:
                _rewrite(ctx, select, conjunct, conjunct.this, conjunct.expression.unnest())
    return statement


def _rewrite(ctx: Context, select: exp.Select, conjunct: exp.EQ, version: exp.Column, sub: exp.Select) -> None:
    """`version` (r.t) = (`sub`): the join of r replaced by the LATERAL TABLE, the conjunct dropped."""
    where = conjunct.expression
    latest = sub.expressions[0] if len(sub.expressions) == 1 else None
    if not isinstance(latest, exp.Max) or not isinstance(latest.this, exp.Column) or sub.args.get("joins") \
            or sub.args.get("group") or sub.args.get("from_") is None:
        raise ctx.error("subquery", f"a correlated subquery is read only as a temporal lookup: {_SHAPE}", where)
    history = table_name(sub.args["from_"].this)
    time = latest.this.name
    key, probe, probe_time = _correlation(ctx, sub, time, where)
    joins = select.args.get("joins") or []
    join = next((j for j in joins if (j.this.alias_or_name or "").lower() == version.table.lower()), None)
    if join is None or table_name(join.this).lower() != history.lower() or join.args.get("on") is not None \
            or join.args.get("side") or version.name.lower() != time.lower():
        raise ctx.error("subquery", f"the subquery looks up versions of {history}: compare a later comma-joined "
                        f"{history} AS r with it, {_SHAPE}", where)
    if not _equates(select.args["where"].this, version.table, key, probe):
        raise ctx.error("subquery", f"the outer query must match the version's key too: add AND "
                        f"{version.table}.{key} = {probe}.{key} ({_SHAPE})", where)
    function = f"{version.table}_versions_of_{history}"
    ctx.catalog.temporal_functions[function.lower()] = {
        "name": function, "history_table": history, "time_attribute": time, "primary_key": key}
    lateral = parse(f"SELECT 1 FROM x, LATERAL TABLE ({function}({probe}.{probe_time})) AS "
                    f"{version.table}", ctx.flavour)[0].args["joins"][0].this
    join.set("this", lateral)
    rest = [c.copy() for c in conjuncts(select.args["where"].this) if c is not conjunct]
    select.set("where", exp.Where(this=exp.and_(*rest)) if rest else None)


def _correlation(ctx: Context, sub: exp.Select, time: str, where: exp.Expr) -> tuple[str, str, str]:
    """(key column, probe alias, probe time column) of `WHERE r2.k = o.k AND r2.t <= o.t`."""
    inner = sub.args["from_"].this.alias_or_name
    parts = conjuncts(sub.args["where"].this) if sub.args.get("where") is not None else []
    keys = [c for c in parts if isinstance(c, exp.EQ) and _side(c, inner) is not None]
    bounds = [b for c in parts if isinstance(c, (exp.LTE, exp.GTE)) and (b := _bound(c, inner, time)) is not None]
    if len(keys) != 1 or len(bounds) != 1 or len(parts) != 2:
        raise ctx.error("subquery", f"a temporal lookup correlates one key and bounds the time: {_SHAPE}", where)
    own, outer = _side(keys[0], inner)
    if own.name.lower() != outer.name.lower() or bounds[0].table.lower() != outer.table.lower():
        raise ctx.error("subquery", f"the versions' key and the probe's have one name, and the probe gives the "
                        f"key and the time: {_SHAPE}", where)
    return own.name, outer.table, bounds[0].name


def _side(eq: exp.EQ, inner: str) -> tuple[exp.Column, exp.Column] | None:
    """(inner column, outer column) of an equality between the subquery's relation and another."""
    left, right = eq.this, eq.expression
    if not (isinstance(left, exp.Column) and isinstance(right, exp.Column)):
        return None
    if left.table.lower() == inner.lower() and right.table and right.table.lower() != inner.lower():
        return left, right
    if right.table.lower() == inner.lower() and left.table and left.table.lower() != inner.lower():
        return right, left
    return None


def _bound(comparison: exp.Expr, inner: str, time: str) -> exp.Column | None:
    """The probe's time column of `r2.t <= o.t` or `o.t >= r2.t` (versions at or before it)."""
    low, high = (comparison.this, comparison.expression) if isinstance(comparison, exp.LTE) else \
        (comparison.expression, comparison.this)
    if (isinstance(low, exp.Column) and low.table.lower() == inner.lower() and low.name.lower() == time.lower()
            and isinstance(high, exp.Column) and high.table and high.table.lower() != inner.lower()):
        return high
    return None


def _equates(condition: exp.Expr, version: str, key: str, probe: str) -> bool:
    wanted = {(version.lower(), key.lower()), (probe.lower(), key.lower())}
    return any(isinstance(c, exp.EQ) and all(isinstance(s, exp.Column) for s in (c.this, c.expression))
               and {(s.table.lower(), s.name.lower()) for s in (c.this, c.expression)} == wanted
               for c in conjuncts(condition))
