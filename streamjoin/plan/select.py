"""One SELECT -> plan tree up to its Project: relations, joins, lateral, filter, aggregate,
PARTITION BY and the projection with each flavour's output naming and key."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.asof import is_asof, plan_asof
from streamjoin.plan.projection import expand_projection, name_of, split_key
from streamjoin.plan.joins import Input, JoinClause, plan_join
from streamjoin.plan.relations import relation_input, temporal_function_input
from streamjoin.plan.scope import Context, SelectScope, ScopeEntry, col, relations


def plan_select(ctx: Context, select: exp.Select, views: dict, partition_by):
    scope = SelectScope(ctx)
    windows = {w.alias.lower(): w.args.get("spec") for w in select.args.get("windows") or []}
    from_ = select.args.get("from_")
    if from_ is None:
        raise ctx.error("missing-from", "a streaming query needs a FROM clause", select)
    current = relation_input(ctx, from_.this, views, windows)
    rights = [(join, *_right_input(ctx, join, views, windows)) for join in select.args.get("joins") or []]
    laterals = [(lateral, ScopeEntry(lateral.alias or "element", {lateral.alias or "element": None}, "stream"))
                for lateral in select.args.get("laterals") or []]
    # every relation is visible before WHERE is resolved: comma joins take their condition from it
    for entry in current.entries + [e for _, right, _ in rights for e in right.entries] + [e for _, e in laterals]:
        scope.add(entry)
    where = [scope.resolve(c) for c in cond.conjuncts(select.args["where"].this)] if select.args.get("where") else []
    key_label = None
    for join, right, temporal_arg in rights:
        current, key_label = _join(ctx, scope, current, join, right, temporal_arg, where)
    for lateral, entry in laterals:
        current = _lateral(ctx, scope, current, lateral, entry)
    if where:
        current = replace(current, node=n.Filter(current.node.kind, current.node.key, current.node,
                                                 exp.and_(*where)))
    items = expand_projection(ctx, scope, select)
    group_by = [scope.resolve(g) for g in (select.args.get("group").expressions if select.args.get("group") else [])]
    aggregated = group_by or any(e.find(exp.AggFunc) for _, e, _ in items)
    if aggregated:
        aggregates = {name: expr for name, expr, _ in items if expr.find(exp.AggFunc)}
        current = replace(current, node=n.Aggregate("table", tuple(group_by), current.node, tuple(group_by), aggregates),
                          key_names={g.sql() for g in group_by} if len(group_by) == 1 else set())
    if partition_by:
        keys = tuple(scope.resolve(p) for p in partition_by)
        node = n.Repartition(current.node.kind, keys, current.node, None, "PARTITION BY")
        current = replace(current, node=node, key_names={k.sql() for k in keys} if len(keys) == 1 else set())
        key_label = name_of(ctx, partition_by[0], 0) if isinstance(partition_by[0], exp.Column) else "KSQL_COL_0"
    key_columns, value_columns = split_key(ctx, current, items, key_label)
    kind = current.node.kind
    project = n.Project(kind, current.node.key, current.node, key_columns, value_columns)
    return replace(current, node=project), list(key_columns), list(value_columns), kind, scope


def _right_input(ctx: Context, join: exp.Join, views, windows):
    right_ast = join.this
    if isinstance(right_ast, exp.Lateral):
        return temporal_function_input(ctx, right_ast)
    version = right_ast.args.get("version")
    return relation_input(ctx, right_ast, views, windows), version.expression if version is not None else None


def _join(ctx: Context, scope: SelectScope, left: Input, join: exp.Join, right: Input, temporal_arg, where: list):
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
    clause = JoinClause(join_type, join, condition, window, temporal, no_condition)
    result = (plan_asof if is_asof(join) else plan_join)(ctx, scope, left, right, clause)
    if isinstance(result.node, n.ForeignKeyJoin):  # keyed by the left table's primary key
        return result, result.node.key[0].name.upper()
    return result, _ksql_key_label(ctx, join_type, condition)


def _join_type(join: exp.Join) -> str:
    side, kind = (join.args.get("side") or "").upper(), (join.args.get("kind") or "").upper()
    if kind == "CROSS":
        return "CROSS"
    if side:
        return side
    return "FULL" if kind == "OUTER" else "INNER"  # Lenses: OUTER JOIN = FULL OUTER JOIN


def _condition(ctx, scope, left: Input, right: Input, join: exp.Join, where: list, join_type):
    """The resolved join condition from ON, USING, NATURAL, Lenses' implicit key equality, or
    (comma and CROSS joins) the WHERE conjuncts that relate the two inputs."""
    if join.args.get("on") is not None:
        return scope.resolve(join.args["on"]), False
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
    if ctx.flavour.implicit_key_join and join_type != "CROSS":
        if len(left.node.key) != len(right.node.key) or not left.node.key:
            raise ctx.error("join-condition", "a join without ON needs both inputs keyed (_key)", join)
        return exp.and_(*(exp.EQ(this=l, expression=r) for l, r in zip(left.node.key, right.node.key))), True
    both = left.aliases | right.aliases
    taken = [c for c in where if relations(c) <= both and relations(c) & left.aliases and relations(c) & right.aliases]
    for conjunct in taken:
        where.remove(conjunct)
    if not taken and join_type != "CROSS":
        raise ctx.error("join-condition", "the join has no condition: add ON or USING (or CROSS JOIN)", join)
    return (exp.and_(*taken) if taken else None), False


def _ksql_key_label(ctx: Context, join_type: str, condition) -> str | None:
    """ksqlDB's key name: KSQL_COL_0 for FULL OUTER or expression joins, else the left-most
    column reference in the join criteria (used when the projection does not name the key)."""
    if join_type == "FULL" or condition is None:
        return "KSQL_COL_0"
    first = cond.conjuncts(condition)[0]
    for side in (first.this, first.expression) if isinstance(first, exp.EQ) else ():
        if isinstance(side, exp.Column):
            return side.name.upper()
    return "KSQL_COL_0"


def _lateral(ctx: Context, scope: SelectScope, current: Input, lateral: exp.Lateral, entry: ScopeEntry) -> Input:
    target = lateral.this if not isinstance(lateral.this, exp.Identifier) else exp.column(lateral.this.copy())
    expression = scope.resolve(target)
    if entry.alias in relations(expression):
        raise ctx.error("lateral", f"LATERAL {entry.alias} refers to itself", lateral)
    entry.kind = current.node.kind
    node = n.Lateral(current.node.kind, current.node.key, current.node, expression, entry.alias)
    return replace(current, node=node, entries=current.entries + [entry])
