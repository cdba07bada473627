"""One SELECT -> plan tree up to its Project: relations, joins, lateral, filter, aggregate,
PARTITION BY and the projection with each flavour's output naming and key."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.clauses import join_clause, lateral_clause
from streamjoin.plan.projection import expand_projection, name_of, split_key
from streamjoin.plan.relations import relation_input, temporal_function_input
from streamjoin.plan.scope import Context, SelectScope, ScopeEntry


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
        current, key_label = join_clause(ctx, scope, current, join, right, temporal_arg, where)
    for lateral, entry in laterals:
        current = lateral_clause(ctx, scope, current, lateral, entry)
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
