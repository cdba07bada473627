"""One join clause: what kind of join the inputs' kinds make it, the rules each flavour enforces,
the repartitioning it needs, and its result kind and key."""

from __future__ import annotations

import re

from dataclasses import dataclass, field, replace

from sqlglot import exp

from streamjoin.dialect.flavours import JoinModel
from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.scope import Context, SelectScope, ScopeEntry


@dataclass
class Input:
    """A join input under construction: its plan, the relations it provides, the names (sql of
    qualified expressions) known to equal its key, and its partition count."""

    node: n.PlanNode
    entries: list[ScopeEntry]
    key_names: set[str] = field(default_factory=set)
    partitions: int | None = None
    window: n.RelationWindow | None = None
    last_join: n.Join | None = None

    @property
    def aliases(self) -> set[str]:
        return {e.alias for e in self.entries}

    @property
    def kind(self) -> str:
        return "stream" if self.node.kind == "stream" else "table"


@dataclass
class JoinClause:
    """A parsed `JOIN right ...` clause before planning."""

    join_type: str
    ast: exp.Join
    condition: exp.Expr | None  # resolved ON/USING/NATURAL/WHERE-derived condition
    within: n.JoinWindow | None = None
    temporal: exp.Expr | None = None  # resolved FOR SYSTEM_TIME AS OF / temporal function arg
    written_without_condition: bool = False


def _key_matches(side: Input, expressions) -> bool:
    """Is `side` already keyed (partitioned) by these join expressions?"""
    if len(expressions) == 1:
        return expressions[0].sql() in side.key_names
    return [e.sql() for e in expressions] == [k.sql() for k in side.node.key]


def _repartition(ctx: Context, side: Input, keys, partitions, reason) -> Input:
    node = n.Repartition(side.node.kind, tuple(keys), side.node, partitions, reason)
    return replace(side, node=node, key_names={k.sql() for k in keys} if len(keys) == 1 else set(),
                   partitions=partitions)


def plan_join(ctx: Context, scope: SelectScope, left: Input, right: Input, clause: JoinClause) -> Input:
    jt = clause.join_type
    split = cond.split(clause.condition, left.aliases, right.aliases)
    written = f"{left.kind} {jt} JOIN {right.kind}"
    if ctx.flavour.on_sides_single_table and clause.condition is not None and not clause.written_without_condition:
        cond.check_single_table_sides(ctx, clause.condition, clause.ast.args.get("on") or clause.ast)
    if jt == "CROSS" and not split.pairs and not split.residual:
        return _finish(ctx, left, right, n.CrossJoin, "CROSS", split, written, left_window=left.window,
                       right_window=right.window)
    if jt == "CROSS":
        jt = "INNER"  # CROSS JOIN + WHERE: for an inner join WHERE is the same as ON
    plan = {JoinModel.KEYED: _plan_keyed, JoinModel.RELATIONAL: _plan_relational,
            JoinModel.WINDOWED: _plan_windowed}[ctx.flavour.join_model]
    return plan(ctx, scope, left, right, clause, split, jt, written)


def _finish(ctx, left, right, cls, jt, split, written, key=(), kind=None, key_names=(), **extra) -> Input:
    kind = kind or ("stream" if left.kind == right.kind == "stream" or cls in (n.StreamTableJoin, n.TemporalJoin)
                    else "table")
    node = cls(kind, tuple(key), jt, left.node, right.node, tuple(p[0] for p in split.pairs),
               tuple(p[1] for p in split.pairs), split.residual_predicate, written=written, **extra)
    names = set(key_names) | ({k.sql() for k in key} if len(key) == 1 else set())
    entries = left.entries if jt in n.FILTERING_JOINS else left.entries + right.entries  # SEMI/ANTI: left rows
    return Input(node, entries, names, left.partitions or right.partitions, None, node)


def _check_key_types(ctx: Context, scope: SelectScope, split, where) -> None:
    for lhs, rhs in split.pairs:
        lt, rt = scope.type_of(lhs), scope.type_of(rhs)
        if lt and rt and not lt.joinable_with(rt):
            raise ctx.error("key-type", f"Invalid join condition: types don't match. Got "
                            f"{lhs.sql()}{{{lt.family}}} = {rhs.sql()}{{{rt.family}}}; CAST one side", where)


def _plan_keyed(ctx, scope, left, right, clause, split, jt, written) -> Input:
    """ksqlDB and Lenses: the inputs' kinds pick the join; joins are on keys (re-keying streams)."""
    where = clause.ast.args.get("on") or clause.ast
    flavour = ctx.flavour
    lk, rk = left.kind, right.kind
    if not split.pairs and flavour.equi_join_conditions_only:
        raise ctx.error("equi-join", "Only equality join criteria is supported: the join expression "
                        "must be a column equal comparison", where)
    if flavour.single_key_equality and len(split.pairs) > 1 and not ctx.option("allow_multi_column_keys"):
        raise ctx.error("multi-column-key", "joins on multiple conditions are not yet supported (set "
                        "'streamjoin.allow_multi_column_keys'='true' to allow multi-column keys)", where)
    if flavour.equi_join_conditions_only and split.residual and not ctx.option("allow_non_equi_predicates"):
        raise ctx.error("equi-join", "Only equality join criteria is supported (set "
                        "'streamjoin.allow_non_equi_predicates'='true' to allow residual predicates)", where)
    _check_key_types(ctx, scope, split, where)
    if lk == "table" and rk == "stream":
        if not flavour.table_right_join_stream or jt != "RIGHT":
            allowed = " (Lenses allows only RIGHT JOIN for table-stream)" if flavour.table_right_join_stream else ""
            raise ctx.error("join-operand-order", "Join between invalid operands requested: left type: "
                            f"KTABLE, right type: KSTREAM; table-stream joins are not supported{allowed}", clause.ast)
        # table RIGHT JOIN stream == stream LEFT JOIN table
        swapped = cond.SplitCondition([(r, l) for l, r in split.pairs], split.residual)
        return _plan_keyed(ctx, scope, right, left, clause, swapped, "LEFT", written)
    lkeys, rkeys = [p[0] for p in split.pairs], [p[1] for p in split.pairs]
    if lk == "stream" and rk == "stream":
        if clause.within is None:
            raise ctx.error("stream-stream-window", "Stream-Stream joins must have a WITHIN clause "
                            "specified (a join window is required)", clause.ast)
        left, right = _copartition(ctx, left, right, lkeys, rkeys, clause.ast)
        key_names = {e.sql() for e in lkeys + rkeys} if len(lkeys) == 1 else set()
        window = clause.within
        if flavour.zero_grace_by_default and window.grace_ms is None:
            window = replace(window, grace_ms=0)
        eager = flavour.eager_outer_without_grace and clause.within.grace_ms is None
        return _finish(ctx, left, right, n.StreamStreamJoin, jt, split, written, key=lkeys, key_names=key_names,
                       window=window, eager_outer=ctx.option("eager_outer", eager))
    if clause.within is not None:
        raise ctx.error("window-on-table", "WITHIN applies to stream-stream joins only; this join has a table input", clause.ast)
    if lk == "stream":  # stream-table
        if jt not in ("INNER", "LEFT"):
            raise ctx.error("stream-table-join-type", f"{jt} OUTER joins between streams and tables are not "
                            "supported (stream-table joins support INNER and LEFT)", clause.ast)
        if flavour.table_joins_on_primary_key and not _key_matches(right, rkeys):
            raise ctx.error("table-non-key", "stream-table joins require to join on the table's primary key; "
                            f"{', '.join(e.sql() for e in rkeys)} is not the key of the table", where)
        left, right = _copartition(ctx, left, right, lkeys, rkeys, clause.ast)
        key_names = {e.sql() for e in lkeys + rkeys} if len(lkeys) == 1 else set()
        reemit = jt == "LEFT" and ctx.option("reemit_on_table_update", flavour.reemit_on_late_table_row)
        return _finish(ctx, left, right, n.StreamTableJoin, jt, split, written, key=lkeys, key_names=key_names,
                       reemit_on_late_table_row=reemit)
    # table-table
    if flavour.table_joins_on_primary_key and not _key_matches(right, rkeys):
        raise ctx.error("table-table-key", "table-table joins require to join on the primary key of the right "
                        "input table (many-to-many joins are not supported)", where)
    if flavour.table_joins_on_primary_key and not _key_matches(left, lkeys):
        if jt not in ("INNER", "LEFT"):
            raise ctx.error("foreign-key-join-type", f"{jt} OUTER JOIN on a foreign key is not supported "
                            "(foreign-key joins support INNER and LEFT)", clause.ast)
        return _finish(ctx, left, right, n.ForeignKeyJoin, jt, split, written, key=left.node.key,
                       key_names=left.key_names)
    left, right = _copartition(ctx, left, right, lkeys, rkeys, clause.ast)
    key_names = {e.sql() for e in lkeys + rkeys} if len(lkeys) == 1 and jt != "FULL" else set()
    return _finish(ctx, left, right, n.TableTableJoin, jt, split, written, key=lkeys, key_names=key_names)


def _copartition(ctx, left: Input, right: Input, lkeys, rkeys, where=None) -> tuple[Input, Input]:
    """Repartition whichever input is not keyed by its join expressions; then the partition
    counts must agree (ksqlDB rejects a mismatch, Lenses repartitions the smaller input)."""
    moved = False
    for side_name in ("left", "right"):
        side, keys = (left, lkeys) if side_name == "left" else (right, rkeys)
        other = right if side_name == "left" else left
        if keys and not _key_matches(side, keys):
            if side.kind == "table" and not ctx.flavour.repartitions_tables:
                continue  # the rules above reject the join
            side = _repartition(ctx, side, keys, other.partitions or side.partitions, "join key")
            moved = True
            left, right = (side, right) if side_name == "left" else (left, side)
    if left.partitions and right.partitions and left.partitions != right.partitions:
        if ctx.flavour.repartitions_to_match_partitions:
            small_left = left.partitions < right.partitions
            side = left if small_left else right
            side = _repartition(ctx, side, side.node.key, max(left.partitions, right.partitions), "partition count")
            left, right = (side, right) if small_left else (left, side)
        elif not moved:
            raise ctx.error("co-partitioning", f"Can't join {_names(left)} with {_names(right)} since the number "
                            f"of partitions don't match ({left.partitions} vs {right.partitions} partitions)",
                            where)
    return left, right


def _names(side: Input) -> str:
    return "`" + "+".join((e.source.name if e.source else e.alias).upper() for e in side.entries) + "`"


def _plan_relational(ctx, scope, left, right, clause, split, jt, written) -> Input:
    """Flink: a temporal join (FOR SYSTEM_TIME AS OF), an interval join (time bounds between two
    streams) or a regular join."""
    where = clause.ast.args.get("on") or clause.ast
    if clause.temporal is not None:
        entry = right.entries[0]
        processing = _is_proctime(scope, clause.temporal)
        if not processing and entry.kind == "versioned_table":
            split = _keyed_by_primary_key(ctx, entry, split, where)
        if jt not in ("INNER", "LEFT"):
            raise ctx.error("temporal-join-type", f"{jt} temporal joins are not supported (INNER and LEFT only)", clause.ast)
        if left.kind == "table" and left.node.key:  # an upsert probe: its deletions must carry the row
            left = replace(left, node=n.ChangelogNormalize("table", left.node.key, left.node))
        return _finish(ctx, left, right, n.TemporalJoin, jt, split, written, kind="stream",
                       time_attribute=clause.temporal, processing_time=processing)
    left_times = {t for e in left.entries for t in _times(e)}
    right_times = {t for e in right.entries for t in _times(e)}
    for conjunct in split.residual:
        bounds = cond.interval_bounds(conjunct, left_times, right_times)
        if bounds and left.kind == right.kind == "stream" and jt not in n.FILTERING_JOINS:
            rest = cond.SplitCondition(split.pairs, [c for c in split.residual if c is not conjunct])
            return _finish(ctx, left, right, n.IntervalJoin, jt, rest, written, kind="stream",
                           bounds=n.IntervalBounds(*bounds))
    # Append-only inputs give an append-only result unless an unmatched row can be retracted.
    kind = "stream" if left.kind == right.kind == "stream" and jt in ("INNER", "SEMI") else "table"
    ttl = _state_ttl_ms(ctx, clause.ast)
    return _finish(ctx, left, right, n.RegularJoin, jt, split, written, kind=kind, state_ttl_ms=ttl)


def _keyed_by_primary_key(ctx, entry: ScopeEntry, split, where):
    """A versioned table is joined on its primary key (in key order), so that its deletions,
    which carry only the key, end the version they delete; other equalities stay as a residual."""
    by_column = {r.sql().lower(): (l, r) for l, r in split.pairs}
    pk = [f"{entry.alias}.{k}".lower() for k in entry.key_columns]
    if not set(pk) <= set(by_column):
        raise ctx.error("temporal-primary-key", "Temporal table join requires the primary key "
                        f"({', '.join(entry.key_columns)}) of {entry.alias} to be contained in the "
                        "equivalence condition of the temporal join", where)
    keys = [by_column[k] for k in pk]
    rest = [exp.EQ(this=l, expression=r) for l, r in split.pairs if (l, r) not in keys]
    return cond.SplitCondition(keys, rest + split.residual)


_TTL = re.compile(r"^\s*(\d+)\s*(ms|milli|millis|milliseconds?|s|sec|secs|seconds?|min|mins|minutes?|h|hours?|d|days?)?\s*$", re.I)
_TTL_UNIT_MS = {"ms": 1, "m": 60_000, "s": 1000, "h": 3_600_000, "d": 86_400_000}


def _state_ttl_ms(ctx, where) -> int | None:
    """Flink `SET 'table.exec.state.ttl' = '1 h'` (0 or unset: keep state forever)."""
    text = ctx.settings.get("table.exec.state.ttl")
    if text is None:
        return None
    match = _TTL.match(str(text))
    if not match:
        raise ctx.error("state-ttl", f"table.exec.state.ttl must be a duration like '1 h' or '3600000 ms', "
                        f"got {text!r}", where)
    unit = (match.group(2) or "ms").lower()
    key = "ms" if unit.startswith("mil") or unit == "ms" else ("m" if unit.startswith("min") else unit[0])
    return int(match.group(1)) * _TTL_UNIT_MS[key] or None


def _times(entry: ScopeEntry) -> set[str]:
    return {f"{entry.alias}.{c}" for c in (entry.timestamp, entry.proctime) if c}


def _is_proctime(scope: SelectScope, expression: exp.Expr) -> bool:
    entry = scope.find(expression.table) if isinstance(expression, exp.Column) else None
    return bool(entry and entry.proctime and entry.proctime.lower() == expression.name.lower())


def _plan_windowed(ctx, scope, left, right, clause, split, jt, written) -> Input:
    """s-Server: streams joined within their OVER windows; a stream-table join reads the table
    as it was when the query started."""
    where = clause.ast.args.get("on") or clause.ast
    if left.kind == right.kind == "stream":
        return _finish(ctx, left, right, n.OverWindowJoin, jt, split, written, kind="stream",
                       left_window=left.window or n.RelationWindow("RANGE", 0),
                       right_window=right.window or n.RelationWindow("RANGE", 0))
    if left.kind == "stream" or right.kind == "stream":
        if not split.pairs:
            raise ctx.error("theta-join", "stream-table joins must be equi-joins (a join using an equality "
                            "operator), not general theta joins", where)
        if left.kind == "table":
            if jt not in ("INNER", "RIGHT"):
                raise ctx.error("stream-table-join-type", "an outer stream-table join must be one-sided: "
                                "keep the stream side", clause.ast)
            swapped = cond.SplitCondition([(r, l) for l, r in split.pairs], split.residual)
            left, right, split, jt = right, left, swapped, "LEFT" if jt == "RIGHT" else jt
        elif jt not in ("INNER", "LEFT"):
            raise ctx.error("stream-table-join-type", "an outer stream-table join must be one-sided: "
                            "keep the stream side", clause.ast)
        return _finish(ctx, left, right, n.StreamTableJoin, jt, split, written, kind="stream",
                       static_snapshot=True)
    return _finish(ctx, left, right, n.TableTableJoin, jt, split, written, kind="table")

