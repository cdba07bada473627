"""Flink SQL joins (the RELATIONAL join model): from the condition and the inputs' time
attributes, a temporal join (FOR SYSTEM_TIME AS OF), a window join (window_start and window_end
equated), an interval join (time bounds between two streams) or a regular join."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from streamjoin.kinds import JoinType, Kind
from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.changelog_nodes import ChangelogNormalize
from streamjoin.plan.hints import duration_ms
from streamjoin.plan.inputs import Input, finish
from streamjoin.plan.lookup_join import is_lookup, plan_lookup_join
from streamjoin.plan.scope import SelectScope, ScopeEntry
from streamjoin.plan.window_nodes import WindowTvfJoin
from streamjoin.plan.windows import window_join


def plan_relational(ctx, scope, left, right, clause, split, jt, written) -> Input:
    """Flink: a temporal join (FOR SYSTEM_TIME AS OF), a window join (window_start and window_end
    of windowed inputs equated), an interval join (time bounds between two streams) or a regular
    join."""
    where = clause.ast.args.get("on") or clause.ast
    if is_lookup(left):
        raise ctx.error("lookup-join", f"{left.entries[0].alias} is a JDBC table, read by lookup joins only: put it "
                        "on the right, FOR SYSTEM_TIME AS OF a PROCTIME() attribute of the left input", clause.ast)
    if is_lookup(right) and clause.temporal is None:
        raise ctx.error("lookup-join", f"{right.entries[0].alias} is a JDBC table, read by lookup joins only: join "
                        "it FOR SYSTEM_TIME AS OF a PROCTIME() attribute of the left input", clause.ast)
    if clause.temporal is not None:
        entry = right.entries[0]
        processing = _is_proctime(scope, clause.temporal)
        if is_lookup(right):
            _check_temporal(ctx, left, entry, clause.temporal, True, clause.ast)
            return plan_lookup_join(ctx, left, right, clause, split, jt, written, processing)
        _check_temporal(ctx, left, entry, clause.temporal, processing, clause.ast)
        if not processing and entry.kind == Kind.VERSIONED_TABLE:
            split = _keyed_by_primary_key(ctx, entry, split, where)
        if not jt.one_sided_outer:
            raise ctx.error("temporal-join-type", f"{jt} temporal joins are not supported (INNER and LEFT only)", clause.ast)
        if left.kind == Kind.TABLE and left.node.key:  # an upsert probe: its deletions must carry the row
            left = replace(left, node=ChangelogNormalize(Kind.TABLE, left.node.key, left.node))
        return finish(ctx, left, right, n.TemporalJoin, jt, split, written, kind=left.kind,  # a table probe: updates
                      time_attribute=clause.temporal, processing_time=processing)
    windowed = window_join(ctx, left, right, split, where)
    if windowed is not None:
        return finish(ctx, left, right, WindowTvfJoin, jt, split, written, kind=Kind.STREAM, **windowed)
    left_times = {t for e in left.entries for t in _times(e)}
    right_times = {t for e in right.entries for t in _times(e)}
    for conjunct in split.residual:
        bounds = cond.interval_bounds(conjunct, left_times, right_times)
        if bounds and left.kind == right.kind == Kind.STREAM and jt not in n.FILTERING_JOINS:
            rest = cond.SplitCondition(split.pairs, [c for c in split.residual if c is not conjunct])
            return finish(ctx, left, right, n.IntervalJoin, jt, rest, written, kind=Kind.STREAM,
                          bounds=n.IntervalBounds(*bounds))
    # Append-only inputs give an append-only result unless an unmatched row can be retracted.
    kind = Kind.STREAM if left.kind == right.kind == Kind.STREAM and jt in (JoinType.INNER, JoinType.SEMI) else Kind.TABLE
    left, left_upsert = _changelog_input(left, [l for l, _ in split.pairs])
    right, right_upsert = _changelog_input(right, [r for _, r in split.pairs])
    default = _state_ttl_ms(ctx, clause.ast)
    ttl = tuple(clause.state_ttl.get(side.entries[0].alias.lower(), default) if len(side.entries) == 1 else default
                for side in (left, right))
    return finish(ctx, left, right, n.RegularJoin, jt, split, written, kind=kind,
                  state_ttl_ms=ttl if ttl[0] != ttl[1] else ttl[0], left_upsert=left_upsert,
                  right_upsert=right_upsert)


def _changelog_input(side: Input, join_keys: list[exp.Expr]) -> tuple[Input, bool]:
    """How a regular join reads `side`: (the input, read as upserts by its join key). A table
    keyed by exactly its join key is read as upserts. Another table whose deletions are bare
    tombstones (an upsert source, filtered or projected) is normalized first, so its changes carry
    their rows; a changelog result (an aggregate's, a join's) carries them already."""
    if side.kind != Kind.TABLE:
        return side, False
    if side.node.key and {k.sql() for k in side.node.key} == {k.sql() for k in join_keys}:
        return side, True
    below = side.node
    while isinstance(below, (n.Filter, n.Project)):
        below = below.child
    if isinstance(below, n.Source) and below.key:
        return replace(side, node=ChangelogNormalize(Kind.TABLE, side.node.key, side.node)), False
    return side, False


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


def _state_ttl_ms(ctx, where) -> int | None:
    """Flink `SET 'table.exec.state.ttl' = '1 h'` (0 or unset: keep state forever)."""
    text = ctx.settings.get("table.exec.state.ttl")
    if text is None:
        return None
    millis = duration_ms(text)
    if millis is None:
        raise ctx.error("state-ttl", f"table.exec.state.ttl must be a duration like '1 h' or '3600000 ms', "
                        f"got {text!r}", where)
    return millis or None


def _check_temporal(ctx, left: Input, entry: ScopeEntry, time: exp.Expr, processing: bool, join) -> None:
    """AS OF takes a time attribute of the left input; event time needs a versioned right table."""
    attributes = sorted(t for e in left.entries for t in _times(e))
    written = f"{time.table}.{time.name}" if isinstance(time, exp.Column) else time.sql()
    if written not in attributes:
        own = f"one of {', '.join(attributes)}" if attributes else (
            "a column with a WATERMARK (event time) or AS PROCTIME() (processing time), which the left "
            "input does not declare")
        raise ctx.error("temporal-time-attribute", f"FOR SYSTEM_TIME AS OF takes the left input's time "
                        f"attribute, {own}; {written} is not one", join.this.args.get("version") or join)
    if not processing and entry.kind != Kind.VERSIONED_TABLE:
        raise ctx.error("temporal-versioned-table", f"an event-time temporal join reads a versioned table, and "
                        f"{entry.alias} is not one: declare it with a PRIMARY KEY and a WATERMARK (or join "
                        "FOR SYSTEM_TIME AS OF a PROCTIME() attribute)", join.this)


def _times(entry: ScopeEntry) -> set[str]:
    return {f"{entry.alias}.{c}" for c in (entry.timestamp, entry.proctime) if c}


def _is_proctime(scope: SelectScope, expression: exp.Expr) -> bool:
    entry = scope.find(expression.table) if isinstance(expression, exp.Column) else None
    return bool(entry and entry.proctime and entry.proctime.lower() == expression.name.lower())
