"""Flink's upsert keys: the column sets that identify a row of an updating result, derived
through the plan as Flink's planner derives them, so that a result row's update or deletion
reaches an upsert sink as a new value or a tombstone of that row's key.

    Source           a table's (or versioned table's) primary key; a stream has none
    Filter, Repartition, Deduplicate
                     the child's keys (Deduplicate: its partition keys)
    Project          the child's keys whose every part is projected, named as projected
    Aggregate        its GROUP BY columns (a global aggregate: none)
    regular join     the left input's keys when the right input's join columns contain one of
                     its keys (each left row joins at most one right row), INNER or LEFT; the
                     right's the other way round (INNER or RIGHT); SEMI / ANTI: the left's
    temporal join    the probe's keys (each probe row joins at most one version)

Other joins (interval, window, stream-stream) give append-only results and need no key.
"""

from __future__ import annotations

from sqlglot import exp

from streamjoin.kinds import JoinType, Kind
from streamjoin.plan import nodes as n
from streamjoin.plan.changelog_nodes import ChangelogNormalize, Deduplicate
from streamjoin.plan.scope import col

Key = tuple[exp.Expr, ...]


def upsert_keys(node: n.PlanNode) -> list[Key]:
    if isinstance(node, n.Source):
        return [node.key] if node.kind == Kind.TABLE and node.key else []
    if isinstance(node, (n.Filter, n.Repartition, ChangelogNormalize)):
        return upsert_keys(node.child)
    if isinstance(node, n.Project):
        return _projected(node)
    if isinstance(node, Deduplicate):
        return [node.key]
    if isinstance(node, n.Aggregate):
        return [tuple(node.group_by)] if node.group_by else []
    if isinstance(node, n.TemporalJoin):
        return upsert_keys(node.left)
    if isinstance(node, n.RegularJoin):
        return _regular_join(node)
    return []  # an append-only result (interval, window, stream-stream join) needs none


def _regular_join(join: n.RegularJoin) -> list[Key]:
    left, right = upsert_keys(join.left), upsert_keys(join.right)
    if join.join_type in n.FILTERING_JOINS:
        return left
    keys = []
    if join.join_type in (JoinType.INNER, JoinType.LEFT) and _unique_on(right, join.right_keys):
        keys += left
    if join.join_type in (JoinType.INNER, JoinType.RIGHT) and _unique_on(left, join.left_keys):
        keys += right
    return keys


def _unique_on(keys: list[Key], columns: tuple[exp.Expr, ...]) -> bool:
    """Does some key of an input lie within its join columns (one row per join key)?"""
    names = {c.sql() for c in columns}
    return any(key and {k.sql() for k in key} <= names for key in keys)


def _projected(project: n.Project) -> list[Key]:
    """A derived table's keys, as columns of the relation it is read as."""
    return [tuple(col(project.alias, name) for name in names)
            for names in _projected_names(project.child, {**project.key_columns, **project.value_columns})]


def projected_key(child: n.PlanNode, columns: dict[str, exp.Expr]) -> dict[str, exp.Expr]:
    """The output key of a projection of `child`: the first upsert key of `child` projected
    whole, as output column name -> expression (empty when none is)."""
    return next(({name: columns[name] for name in names} for names in _projected_names(child, columns)), {})


def _projected_names(child: n.PlanNode, columns: dict[str, exp.Expr]):
    """The output column names of each upsert key of `child` that `columns` project whole."""
    by_expr: dict[str, str] = {}
    for name, expr in columns.items():
        by_expr.setdefault(expr.sql(), name)
    for key in upsert_keys(child):
        names = [by_expr.get(part.sql()) for part in key]
        if all(names):
            yield names
