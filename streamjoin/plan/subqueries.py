"""`WHERE ... [NOT] IN (subquery)` and `[NOT] EXISTS (subquery)`: semi and anti joins of the
query's relations (the left input) with the subquery's rows (the right input).

A subquery that reads one relation is joined with that relation: its WHERE conjuncts over the
relation alone filter it; those that also name the outer relations (correlation) and, for IN,
`probe = the subquery's column` form the join condition. A subquery with GROUP BY, aggregates,
DISTINCT or joins is planned whole, as a derived table (it cannot be correlated then), and IN
compares with its columns. `(a, b) IN (SELECT x, y ...)` compares column by column. NOT IN is
null-aware, as SQL's three-valued logic has it: `x NOT IN (s)` is not true when x or any value of
s is NULL, so a right row blocks a left row when `x = y` is not false (for every column).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.inputs import Input, JoinClause
from streamjoin.plan.joins import plan_join
from streamjoin.plan.scope import Context, SelectScope, col, relations


@dataclass(frozen=True)
class SubqueryPredicate:
    """One WHERE conjunct that is a subquery test."""

    written: exp.Expr
    query: exp.Select
    anti: bool
    probe: exp.Expr | None = None  # IN's left operand; None for EXISTS


def subquery_predicate(conjunct: exp.Expr) -> SubqueryPredicate | None:
    negated = isinstance(conjunct, exp.Not)
    inner = conjunct.this.unnest() if negated else conjunct
    if isinstance(inner, exp.Exists) and isinstance(inner.this, exp.Select):
        return SubqueryPredicate(conjunct, inner.this, negated)
    if isinstance(inner, exp.In) and isinstance(inner.args.get("query"), exp.Subquery):
        query = inner.args["query"].this
        if isinstance(query, exp.Select):
            return SubqueryPredicate(conjunct, query, negated, inner.this)
    return None


def reads_one_relation(query: exp.Select) -> bool:
    """Is the subquery a (filtered) relation, joined as such? Else it is planned whole."""
    shaped = ("joins", "group", "laterals", "distinct", "having")
    return not any(query.args.get(part) for part in shaped) and not any(e.find(exp.AggFunc) for e in query.expressions)


def check_uncorrelated(ctx: Context, predicate: SubqueryPredicate, outer: SelectScope) -> None:
    """A subquery planned whole cannot name the outer query's relations."""
    query = predicate.query
    inner = {t.alias_or_name.lower() for t in query.find_all(exp.Table)}
    for column in query.find_all(exp.Column):
        if column.table and column.table.lower() not in inner and outer.find(column.table) is not None:
            raise ctx.error("subquery", "a subquery with GROUP BY, aggregates, DISTINCT or joins cannot refer to the "
                            f"outer query ({column.sql()})", column)


def semi_anti_join(ctx: Context, outer: SelectScope, left: Input, right: Input,
                   predicate: SubqueryPredicate) -> Input:
    """Plan `left` SEMI / ANTI JOIN `right`: the subquery's FROM relation, or the whole subquery as
    a derived table when it does not read one relation (both planned by the caller)."""
    query = predicate.query
    scope = SelectScope(ctx, right.entries, outer=outer)
    filters, correlation = [], []
    whole = not reads_one_relation(query)
    where = query.args.get("where")
    for conjunct in cond.conjuncts(where.this if where and not whole else None):
        resolved = scope.resolve(conjunct)
        (filters if relations(resolved) <= right.aliases else correlation).append(resolved)
    if predicate.probe is not None:
        correlation.append(_membership(ctx, outer, scope, predicate, right if whole else None))
    if filters:
        right = replace(right, node=n.Filter(right.node.kind, right.node.key, right.node, exp.and_(*filters)))
    join_type = "ANTI" if predicate.anti else "SEMI"
    clause = JoinClause(join_type, predicate.written, exp.and_(*correlation) if correlation else None)
    return plan_join(ctx, scope, left, right, clause)


def _membership(ctx: Context, outer: SelectScope, scope: SelectScope, predicate: SubqueryPredicate,
                derived: Input | None) -> exp.Expr:
    """IN's condition on a pair: each probe equals its column of the subquery (null-aware for NOT IN)."""
    probe = predicate.probe.unnest()
    probes = list(probe.expressions) if isinstance(probe, exp.Tuple) else [probe]
    if derived is not None:
        entry = derived.entries[0]
        values = [col(entry.alias, name) for name in entry.columns]
    else:
        if any(isinstance(e, exp.Star) for e in predicate.query.expressions):
            raise ctx.error("subquery", "an IN subquery names the columns it selects", predicate.query)
        values = [scope.resolve(e.unalias()) for e in predicate.query.expressions]
    if len(values) != len(probes):
        raise ctx.error("subquery", f"IN compares {len(probes)} column(s) with a subquery of {len(values)}",
                        predicate.written)
    terms = []
    for written, value in zip(probes, values):
        probe_value = outer.resolve(written)
        equal = exp.EQ(this=probe_value, expression=value)
        if predicate.anti:  # null-aware: `probe = value` is TRUE or NULL
            equal = exp.paren(exp.or_(equal, exp.Is(this=probe_value.copy(), expression=exp.Null()),
                                      exp.Is(this=value.copy(), expression=exp.Null())), copy=False)
        terms.append(equal)
    return exp.and_(*terms)
