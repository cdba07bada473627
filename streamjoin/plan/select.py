"""One SELECT -> plan tree up to its Project: relations, joins, lateral, filter, aggregate,
PARTITION BY and the projection with each flavour's output naming and key."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from sqlglot import exp

from streamjoin.kinds import Kind
from streamjoin.plan import comparisons
from streamjoin.plan import conditions as cond
from streamjoin.dialect import WindowTableFunction
from streamjoin.dialect.flavours import OutputKey
from streamjoin.plan import nodes as n
from streamjoin.plan.changelog_nodes import Deduplicate
from streamjoin.plan import projection
from streamjoin.dialect.nodes import AggregationWindow
from streamjoin.plan.clauses import join_clause, lateral_clause
from streamjoin.plan.deduplication import deduplicate, first_rank_columns, row_number
from streamjoin.plan.hints import state_ttl_hints
from streamjoin.plan.inputs import Input
from streamjoin.plan.keys import KeyNaming
from streamjoin.plan.relations import (
    relation_input, table_name, temporal_function, temporal_function_input, versioned_view,
)
from streamjoin.plan.scope import Context, SelectScope, ScopeEntry, WindowedBy, col
from streamjoin.plan.windows import group_window, window_aggregate, window_input, windowed_table
from streamjoin.plan.subqueries import check_uncorrelated, reads_one_relation, semi_anti_join, subquery_predicate


class _Right(NamedTuple):
    """A JOIN clause's right relation: the clause, its input, its FOR SYSTEM_TIME AS OF argument."""

    join: exp.Join
    input: Input
    temporal: exp.Expr | None


class _Lateral(NamedTuple):
    """A LATERAL clause (an unnested array) and the relation it adds to the scope."""

    lateral: exp.Lateral
    entry: ScopeEntry


class _Where(NamedTuple):
    """WHERE: its resolved conjuncts, and its [NOT] IN / [NOT] EXISTS tests (semi / anti joins)."""

    predicates: list[exp.Expr]
    tests: list


def plan_select(ctx: Context, select: exp.Select, views: dict, partition_by, sink: str | None = None,
                emit_final: bool = False, ranked: frozenset = frozenset()):
    """The plan of one SELECT up to its Project. `sink`: the relation a persistent query writes
    (None for a transient query or a view); `emit_final`: EMIT FINAL; `ranked`: the columns the
    enclosing query keeps at 1 (a ROW_NUMBER here deduplicates)."""
    scope = SelectScope(ctx)
    named = [w for w in select.args.get("windows") or [] if not isinstance(w, AggregationWindow)]
    windows = {w.name.lower(): w.args.get("spec") for w in named}
    from_ = select.args.get("from_")
    if from_ is None:
        raise ctx.error("missing-from", "a streaming query needs a FROM clause", select)
    current = _relation(ctx, from_.this, views, windows, first_rank_columns(select))
    rights = [_Right(join, *_right_input(ctx, join, views, windows)) for join in select.args.get("joins") or []]
    laterals = [_Lateral(lateral, ScopeEntry(lateral.alias or "element", {lateral.alias or "element": None}, "stream"))
                for lateral in select.args.get("laterals") or []]
    # every relation is visible before WHERE is resolved: comma joins take their condition from it
    written = [(from_.this, current.entries), *((right.join.this, right.input.entries) for right in rights),
               *((lateral.lateral, [lateral.entry]) for lateral in laterals)]
    for node, entries in written:
        for entry in entries:
            scope.add(entry, node)
    where = _where(ctx, scope, select)
    current, key_label = _joined(ctx, scope, select, current, rights, laterals, where.predicates)
    number = row_number(select)
    if number is not None:
        current = deduplicate(ctx, scope, current, number, ranked)
    for test in where.tests:
        current = _semi_anti_join(ctx, scope, current, test, views, windows)
    if select.args.get("group") and ctx.flavour.group_window_functions:
        current, select = group_window(ctx, select, scope, current) or (current, select)
    scope.synthetic_key = current.naming.synthetic
    items = [(name, exp.Literal.number(1) if written is number else expr, written)  # every kept row is rank 1
             for name, expr, written in projection.expand(ctx, scope, select, current.naming,
                                                          partitioned=bool(partition_by))]
    current = _aggregated(ctx, scope, select, current, items, emit_final)
    if partition_by:
        current, key_label = _partitioned(ctx, scope, current, partition_by)
    projected = projection.split_key(ctx, current, items, key_label, sink)
    kind = current.node.kind
    from_columns = ctx.flavour.output_key is OutputKey.UPSERT_KEY or projected.key_from_columns
    key = tuple(projected.key.values()) if from_columns else current.node.key
    project = n.Project(kind, key, current.node, projected.key, projected.values, key_from_columns=from_columns)
    return replace(current, node=project), list(projected.key), list(projected.values), kind, scope


def _where(ctx: Context, scope: SelectScope, select: exp.Select) -> _Where:
    predicates, tests = [], []
    for conjunct in cond.conjuncts(select.args["where"].this) if select.args.get("where") else []:
        test = subquery_predicate(conjunct) if ctx.flavour.subquery_joins else None
        if test is None:
            predicates.append(scope.resolve(conjunct))
        else:
            tests.append(test)
    for conjunct in predicates:
        comparisons.check(ctx, scope, conjunct, "WHERE")
    return _Where(predicates, tests)


def _joined(ctx: Context, scope: SelectScope, select: exp.Select, current: Input, rights: list[_Right],
            laterals: list[_Lateral], where: list[exp.Expr]) -> tuple[Input, str | None]:
    """The FROM relation joined with each JOIN's, then each LATERAL's, then filtered by WHERE;
    with the key name the last join gives (see plan.clauses)."""
    key_label = None
    state_ttl = state_ttl_hints(ctx, select, scope)
    for right in rights:
        current, key_label = join_clause(ctx, scope, current, right.join, right.input, right.temporal, where,
                                         state_ttl)
    for lateral in laterals:
        current = lateral_clause(ctx, scope, current, lateral.lateral, lateral.entry)
    if where:
        current = replace(current, node=n.Filter(current.node.kind, current.node.key, current.node,
                                                 exp.and_(*where)))
    return current, key_label


def _semi_anti_join(ctx: Context, scope: SelectScope, current: Input, test, views, windows) -> Input:
    """WHERE [NOT] IN / [NOT] EXISTS (subquery): `current` joined with the subquery's relation."""
    from_ = test.query.args.get("from_")
    if from_ is None:
        raise ctx.error("subquery", "a subquery in WHERE needs a FROM clause", test.written)
    if reads_one_relation(test.query):
        right = _relation(ctx, from_.this, views, windows)
    else:
        check_uncorrelated(ctx, test, scope)
        ctx.derived += 1
        right = _derived(ctx, test.query, f"_subquery{ctx.derived}", views, test.written)
    return semi_anti_join(ctx, scope, current, right, test)


def _aggregated(ctx: Context, scope: SelectScope, select: exp.Select, current: Input, items: list,
                emit_final: bool) -> Input:
    """GROUP BY, HAVING and the aggregation window; `current` as it is where nothing aggregates."""
    group_by = [scope.resolve(g) for g in (select.args.get("group").expressions if select.args.get("group") else [])]
    aggregated = group_by or any(e.find(exp.AggFunc) for _, e, _ in items)
    having = scope.resolve(select.args["having"].this) if select.args.get("having") else None
    comparisons.check(ctx, scope, having, "HAVING")
    if having is not None and not aggregated:
        raise ctx.error("having", "HAVING needs GROUP BY or an aggregate", select.args["having"])
    aggregation_window = _aggregation_window(ctx, select, emit_final, current)
    if aggregation_window is not None and not aggregated:
        raise ctx.error("window-without-group-by", "WINDOW TUMBLING|HOPPING|SESSION needs GROUP BY", select)
    if not aggregated:
        return current
    aggregates = {name: expr for name, expr, _ in items if expr.find(exp.AggFunc)}
    # a windowed aggregate's key ends with its window's bounds (plan.keys names no column after them)
    bounds = tuple(exp.column(b) for b in ctx.flavour.window_columns) if aggregation_window else ()
    node = window_aggregate(current.entries, current.node, group_by, aggregates, having) or \
        n.Aggregate("table", tuple(group_by) + bounds, current.node, tuple(group_by), aggregates, having,
                    aggregation_window)
    return replace(current, node=node, key_names={g.sql() for g in group_by} if len(group_by) == 1 else set(),
                   naming=KeyNaming.of_key(group_by))


def _partitioned(ctx: Context, scope: SelectScope, current: Input, partition_by) -> tuple[Input, str]:
    """PARTITION BY: `current` re-keyed, with the key's name (a column's own, else the flavour's
    name for a generated column)."""
    keys = tuple(scope.resolve(p) for p in partition_by)
    node = n.Repartition(current.node.kind, keys, current.node, None, "PARTITION BY")
    current = replace(current, node=node, key_names={k.sql() for k in keys} if len(keys) == 1 else set(),
                      naming=KeyNaming.of_key(keys))
    first = partition_by[0]
    generated = f"{ctx.flavour.expression_column_prefix}0"
    return current, projection.folded(ctx, first.this) if isinstance(first, exp.Column) else generated


_DAY_MS = 24 * 3_600_000


def _aggregation_window(ctx: Context, select: exp.Select, emit_final: bool, below: Input) -> n.GroupWindow | None:
    window = next((w for w in select.args.get("windows") or [] if isinstance(w, AggregationWindow)), None)
    if window is None:  # EMIT FINAL without a window is rejected before planning (plan.checks)
        return None
    if not ctx.flavour.window_columns:  # the windowed key ends with its bounds' columns
        raise ctx.error("window-aggregation", f"WINDOW TUMBLING|HOPPING|SESSION is ksqlDB's; {ctx.flavour.name} "
                        "has no window bound columns to key its results by", window)
    kind = window.args["kind"]
    if kind == "SESSION" and below.node.kind != Kind.STREAM:
        # a session's bounds are its rows' times; a changelog's retraction carries the time of
        # the change, not of the row it withdraws, so it cannot say which session to shrink
        names = ", ".join(e.alias for e in below.entries)
        raise ctx.error("session-window", f"WINDOW SESSION groups the rows of a stream, and the rows it reads "
                        f"here ({names}) are a table's changelog: aggregate a stream", window)
    size = window.args["size"].millis
    if kind == "SESSION" and size <= 0:
        raise ctx.error("session-window", f"a SESSION window's inactivity gap must be more than 0 ms, not {size}",
                        window)
    advance = window.args["advance"].millis if window.args.get("advance") else size
    if not 0 < advance <= size:
        raise ctx.error("window-advance", f"ADVANCE BY must be more than 0 and at most SIZE ({size} ms)", window)
    # no GRACE PERIOD: Kafka Streams' old default, a day's retention minus the window (or gap)
    grace = window.args["grace"].millis if window.args.get("grace") else max(_DAY_MS - size, 0)
    return n.GroupWindow(kind, size, advance, grace, emit_final)


def _right_input(ctx: Context, join: exp.Join, views, windows):
    right_ast = join.this
    if isinstance(right_ast, exp.Lateral):
        spec, alias, time_argument = temporal_function(ctx, right_ast)
        view = ctx.catalog.views.get(spec["history_table"].lower())
        if view is not None:
            return versioned_view(_derived(ctx, view[1], alias, views, right_ast), spec), time_argument
        return temporal_function_input(ctx, right_ast, spec, alias), time_argument
    version = right_ast.args.get("version")
    return _relation(ctx, right_ast, views, windows), version.expression if version is not None else None


def _relation(ctx: Context, ast: exp.Expr, views, windows, ranked: frozenset = frozenset()) -> Input:
    """A FROM / JOIN relation: a catalog source or Lenses view, a derived table (a subquery) or a
    view created by CREATE VIEW (its query planned here, under the alias it is read as)."""
    if isinstance(ast, exp.Subquery):  # where the flavour reads derived tables (plan.checks)
        ctx.derived += 1
        return _derived(ctx, ast.this, ast.alias or f"_subquery{ctx.derived}", views, ast, ranked)
    if isinstance(ast, WindowTableFunction):
        if not ctx.flavour.window_table_functions:
            raise ctx.error("window-function", f"windowing table functions are not supported in {ctx.flavour.name}",
                            ast)
        return window_input(ctx, ast, _relation(ctx, windowed_table(ast.this, ast), views, windows))
    view = ctx.catalog.views.get(table_name(ast).lower()) if isinstance(ast, exp.Table) else None
    if view is not None:
        return _derived(ctx, view[1], ast.alias or view[0], views, ast, ranked)
    return relation_input(ctx, ast, views, windows)


def _derived(ctx: Context, query: exp.Expr, alias: str, views, where: exp.Expr, ranked=frozenset()) -> Input:
    """A named query read as relation `alias`, its columns typed as the query types them."""
    if not isinstance(query, exp.Select):
        raise ctx.error("derived-table", "a derived table must be a SELECT", where)
    planned, _, _, kind, inner = plan_select(ctx, query, views, None, ranked=ranked)
    project = planned.node
    columns = {**project.key_columns, **project.value_columns}
    entry = ScopeEntry(alias, {name: inner.type_of(e) for name, e in columns.items()}, kind)
    _carry_attributes(entry, inner.entries, project.child, columns)
    return Input(replace(project, alias=alias), [entry], set(), planned.partitions)


def _carry_attributes(entry: ScopeEntry, inner: list[ScopeEntry], below: n.PlanNode, columns: dict) -> None:
    """What a derived table keeps of the relations it reads, where it projects the columns that
    carry it: a time attribute (through filters, interval and temporal joins, not through
    regular joins or aggregates); a versioned table read whole stays versioned, as does a
    deduplication by event time; windowed rows stay windowed."""
    by_expr = {e.sql(): name for name, e in columns.items()}
    passed = lambda source, column: column and by_expr.get(col(source.alias, column).sql())  # noqa: E731
    while isinstance(below, n.Filter):
        below = below.child
    if len(inner) == 1:
        source = inner[0]
        entry.timestamp, entry.proctime = passed(source, source.timestamp), passed(source, source.proctime)
        keys = tuple(passed(source, k) for k in source.key_columns)
        if source.kind == Kind.VERSIONED_TABLE and entry.timestamp and keys and all(keys):
            entry.kind, entry.key_columns = "versioned_table", keys
        bounds = (passed(source, source.windowed.start), passed(source, source.windowed.end)) if source.windowed else ()
        if bounds and all(bounds):
            entry.windowed = WindowedBy(source.windowed.window, *bounds)
    elif isinstance(below, (n.IntervalJoin, n.TemporalJoin)):
        entry.timestamp = next(filter(None, (passed(source, source.timestamp) for source in inner)), None)
    if isinstance(below, Deduplicate) and below.order_time is not None:  # versions by event time
        keys = tuple(by_expr.get(k.sql()) for k in below.key)
        time = by_expr.get(below.order_time.sql())
        if all(keys) and time:
            entry.kind, entry.key_columns, entry.timestamp = "versioned_table", keys, time
