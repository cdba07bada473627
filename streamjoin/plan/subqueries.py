"""`WHERE ... [NOT] IN (subquery)` and `[NOT] EXISTS (subquery)`: semi and anti joins of the
query's relations (the left input) with the subquery's one relation (the right input).

The subquery's WHERE conjuncts over its own relation filter that relation; those that also name
the outer relations (correlation) and, for IN, `probe = the subquery's column` form the join
condition. NOT IN is null-aware, as SQL's three-valued logic has it: `x NOT IN (s)` is not true
when x or any value of s is NULL, so a right row blocks a left row when `x = y` is not false.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.inputs import Input, JoinClause
from streamjoin.plan.joins import plan_join
from streamjoin.plan.scope import Context, SelectScope, relations


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


def semi_anti_join(ctx: Context, outer: SelectScope, left: Input, right: Input,
                   predicate: SubqueryPredicate) -> Input:
    """Plan `left` SEMI / ANTI JOIN `right` (the subquery's FROM relation, planned by the caller)."""
    query = predicate.query
    if query.args.get("joins") or query.args.get("group") or query.args.get("laterals"):
        raise ctx.error("subquery", "a subquery in WHERE reads one relation, without JOIN or GROUP BY "
                        "(use a derived table in its FROM)", predicate.written)
    scope = SelectScope(ctx, right.entries, outer=outer)
    filters, correlation = [], []
    where = query.args.get("where")
    for conjunct in cond.conjuncts(where.this if where else None):
        resolved = scope.resolve(conjunct)
        (filters if relations(resolved) <= right.aliases else correlation).append(resolved)
    if predicate.probe is not None:
        if len(query.expressions) != 1 or isinstance(query.expressions[0], exp.Star):
            raise ctx.error("subquery", "an IN subquery selects exactly one column", query)
        probe, value = outer.resolve(predicate.probe), scope.resolve(query.expressions[0].unalias())
        equal = exp.EQ(this=probe, expression=value)
        if predicate.anti:  # null-aware: `probe = value` is TRUE or NULL
            equal = exp.paren(exp.or_(equal, exp.Is(this=probe.copy(), expression=exp.Null()),
                                      exp.Is(this=value.copy(), expression=exp.Null())), copy=False)
        correlation.append(equal)
    if filters:
        right = replace(right, node=n.Filter(right.node.kind, right.node.key, right.node, exp.and_(*filters)))
    join_type = "ANTI" if predicate.anti else "SEMI"
    clause = JoinClause(join_type, predicate.written, exp.and_(*correlation) if correlation else None)
    return plan_join(ctx, scope, left, right, clause)
