"""The clauses between FROM and the projection: one JOIN (its type, its condition from ON, USING,
NATURAL or WHERE, its window) and LATERAL."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from streamjoin.kinds import JoinType
from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.asof import is_asof, plan_asof
from streamjoin.plan.inputs import Input, JoinClause
from streamjoin.plan.joins import plan_join
from streamjoin.plan.scope import Context, SelectScope, ScopeEntry, col, relations


def join_clause(ctx: Context, scope: SelectScope, left: Input, join: exp.Join, right: Input, temporal_arg, where: list,
                state_ttl: dict[str, int]):
    right_ast = join.this
    temporal = scope.resolve(temporal_arg) if temporal_arg is not None else None
    join_type = _join_type(join)
    condition, no_condition = _condition(ctx, scope, left, right, join, where, join_type)
    outside = relations(condition) - left.aliases - right.aliases if condition is not None else set()
    if outside:
        raise ctx.error("unknown-relation", f"the join condition references {', '.join(sorted(outside))}, "
                        "which is not joined yet", join.args.get("on") or join)
    within = right_ast.args.get("within") if isinstance(right_ast, exp.Table) else None
    window = None
    if within is not None:
        before = within.args["before"].millis if within.args.get("before") else 0
        after = within.args["after"].millis if within.args.get("after") else before
        grace = within.args["grace"].millis if within.args.get("grace") else None
        window = n.JoinWindow(before, after, grace)
    clause = JoinClause(join_type, join, condition, window, temporal, no_condition, state_ttl)
    result = (plan_asof if is_asof(join) else plan_join)(ctx, scope, left, right, clause)
    if isinstance(result.node, n.ForeignKeyJoin):  # keyed by the left table's primary key
        return result, result.node.key[0].name.upper()
    return result, _ksql_key_label(ctx, join_type, condition)


def _join_type(join: exp.Join) -> str:
    side, kind = (join.args.get("side") or "").upper(), (join.args.get("kind") or "").upper()
    if kind == JoinType.CROSS:
        return "CROSS"
    if side:
        return side
    return "FULL" if kind == "OUTER" else "INNER"  # Lenses: OUTER JOIN = FULL OUTER JOIN


def _condition(ctx, scope, left: Input, right: Input, join: exp.Join, where: list, join_type):
    """The resolved join condition from ON, USING, NATURAL, Lenses' implicit key equality, or
    (comma and CROSS joins) the WHERE conjuncts that relate the two inputs."""
    if join.args.get("on") is not None:
        on = scope.resolve(join.args["on"])
        if ctx.flavour.implicit_key_join and not _relates(on, left, right):
            # Lenses joins on keys: an ON of one-table predicates filters the _key join
            return exp.and_(on, _key_equality(ctx, left, right, join)), False
        return on, False
    using = [u.name for u in join.args.get("using") or []]
    if join.args.get("method", "").upper() == "NATURAL":
        right_cols = {c.lower() for e in right.entries for c in e.columns}
        using = [c for e in left.entries for c in e.columns if c.lower() in right_cols and c.upper() != "ROWTIME"]
    if using:
        pairs = []
        for name in using:
            lentry = next((e for e in left.entries if e.column(name)), None)
            rentry = next((e for e in right.entries if e.column(name)), None)
            if not lentry or not rentry:
                raise ctx.error("unknown-column", f"USING column {name!r} is not in both inputs", join)
            scope.using.setdefault(name.lower(), lentry.alias)
            pairs.append(exp.EQ(this=col(lentry.alias, lentry.column(name)), expression=col(rentry.alias, rentry.column(name))))
        return exp.and_(*pairs), False
    if is_asof(join):  # no ON: every row has the one empty key; WHERE filters the matches
        return None, False
    if ctx.flavour.implicit_key_join and join_type != JoinType.CROSS:
        return _key_equality(ctx, left, right, join), True
    both = left.aliases | right.aliases
    taken = [c for c in where if relations(c) <= both and relations(c) & left.aliases and relations(c) & right.aliases]
    for conjunct in taken:
        where.remove(conjunct)
    if not taken and join_type != JoinType.CROSS:
        raise ctx.error("join-condition", "the join has no condition: add ON or USING (or CROSS JOIN)", join)
    return (exp.and_(*taken) if taken else None), False


def _relates(condition: exp.Expr, left: Input, right: Input) -> bool:
    """Whether a conjunct of `condition` reads both inputs."""
    return any(relations(c) & left.aliases and relations(c) & right.aliases for c in cond.conjuncts(condition))


def _key_equality(ctx: Context, left: Input, right: Input, join: exp.Join) -> exp.Expr:
    """Lenses' implicit join condition: the inputs' keys (_key) are equal."""
    if len(left.node.key) != len(right.node.key) or not left.node.key:
        raise ctx.error("join-condition", "a join without ON, or whose ON compares no column of one input with "
                        "one of the other, joins on the keys, and needs both inputs keyed (_key)", join)
    return exp.and_(*(exp.EQ(this=l, expression=r) for l, r in zip(left.node.key, right.node.key)))


def _ksql_key_label(ctx: Context, join_type: str, condition) -> str | None:
    """ksqlDB's key name: the flavour's first expression column (KSQL_COL_0) for FULL OUTER or
    expression joins, else the left-most column reference in the join criteria (used when the
    projection does not name the key)."""
    synthetic = f"{ctx.flavour.expression_column_prefix}0"
    if join_type == JoinType.FULL or condition is None:
        return synthetic
    first = cond.conjuncts(condition)[0]
    for side in (first.this, first.expression) if isinstance(first, exp.EQ) else ():
        if isinstance(side, exp.Column):
            return side.name.upper()
    return synthetic


def lateral_clause(ctx: Context, scope: SelectScope, current: Input, lateral: exp.Lateral, entry: ScopeEntry) -> Input:
    target = lateral.this if not isinstance(lateral.this, exp.Identifier) else exp.column(lateral.this.copy())
    expression = scope.resolve(target)
    if entry.alias in relations(expression):
        raise ctx.error("lateral", f"LATERAL {entry.alias} refers to itself", lateral)
    entry.kind = current.node.kind
    node = n.Lateral(current.node.kind, current.node.key, current.node, expression, entry.alias)
    return replace(current, node=node, entries=current.entries + [entry])
