"""ASOF JOIN stages (RisingWave/Snowflake; beyond the seeds, so the same in every flavour):

    [LEFT [OUTER]] ASOF JOIN r MATCH_CONDITION (l.t >= r.t) [ON l.k = r.k [AND residual]]

The operator (`operators/asof.py`) orders each input by its event time (`Record.ts`) and emits
on watermarks, so MATCH_CONDITION compares the two inputs' event times: each side's column must
be its relation's declared timestamp column (ksqlDB `WITH (timestamp='c')`, Flink `WATERMARK
FOR c`, a case's `timestamp`) or `alias.ROWTIME` (the record time, which that column sets).
Any other column is rejected rather than silently ordered by a time it does not hold.
"""

from __future__ import annotations

from sqlglot import exp

from streamjoin.kinds import JoinType, Kind
from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.copartition import copartition
from streamjoin.plan.inputs import Input, JoinClause, check_key_types, finish
from streamjoin.plan.scope import Context, SelectScope, ScopeEntry, col, qualifier

ROWTIME = "ROWTIME"
# Each comparison read `left <op> right`, and as written `right <op> left` (mirrored).
_COMPARISONS = {exp.GTE: (">=", "<="), exp.GT: (">", "<"), exp.LTE: ("<=", ">="), exp.LT: ("<", ">")}
_SHAPE = ("MATCH_CONDITION must be one comparison (>=, >, <=, <) between a column of each input, "
          "e.g. MATCH_CONDITION (l.ts >= r.ts)")


def _written_asof(join: exp.Join) -> bool:
    return (join.args.get("method") or "").upper() == "ASOF"


def is_asof(join: exp.Join) -> bool:
    """An ASOF JOIN, or a MATCH_CONDITION on another join (planned here to be rejected)."""
    return _written_asof(join) or join.args.get("match_condition") is not None


def plan_asof(ctx: Context, scope: SelectScope, left: Input, right: Input, clause: JoinClause) -> Input:
    join, jt = clause.ast, clause.join_type
    match = join.args.get("match_condition")
    if not _written_asof(join):
        raise ctx.error("asof-match-condition", "MATCH_CONDITION belongs to an ASOF JOIN: write ASOF JOIN", match)
    if match is None:
        raise ctx.error("asof-match-condition", f"ASOF JOIN needs a MATCH_CONDITION: {_SHAPE}", join)
    if jt not in (JoinType.INNER, JoinType.LEFT):
        raise ctx.error("asof-join-type", f"{jt} ASOF joins are not supported (INNER and LEFT only: a "
                        "left row looks up its one closest right row)", join)
    if clause.within is not None or clause.temporal is not None or left.window or right.window:
        raise ctx.error("asof-clause", "ASOF JOIN takes no WITHIN, OVER or FOR SYSTEM_TIME clause: "
                        "MATCH_CONDITION picks the one closest row", join)
    (left_time, left_written), comparison, (right_time, right_written) = _match_sides(ctx, scope, left, right, match)
    # A table input is pointed at where the query names it: the right relation, the left column.
    for side, time, written, where in ((left, left_time, left_written, left_written),
                                       (right, right_time, right_written, join.this)):
        if side.kind != Kind.STREAM:
            raise ctx.error("asof-stream-input", "ASOF JOIN joins two streams (append-only inputs); "
                            f"{time.table} is a table", where)
        _check_event_time(ctx, scope, side, time, written)
    split = cond.split(clause.condition, left.aliases, right.aliases)
    check_key_types(ctx, scope, split, join.args.get("on") or join)
    lkeys, rkeys = [p[0] for p in split.pairs], [p[1] for p in split.pairs]
    if lkeys:
        left, right = copartition(ctx, left, right, lkeys, rkeys, join)
    elif max(left.partitions or 1, right.partitions or 1) > 1:
        # Without ON every row has the one empty key, which a task per partition cannot see whole.
        raise ctx.error("asof-partitions", "an ASOF JOIN without ON keys needs single-partition inputs "
                        f"({left.partitions or 1} vs {right.partitions or 1} partitions): add ON l.k = r.k", join)
    key_names = {e.sql() for e in lkeys + rkeys} if len(lkeys) == 1 else set()
    return finish(ctx, left, right, n.AsofJoin, jt, split, f"stream {jt} ASOF JOIN stream", key=lkeys,
                  kind="stream", key_names=key_names, left_time=left_time, right_time=right_time,
                  comparison=comparison)


def _match_sides(ctx: Context, scope: SelectScope, left: Input, right: Input, match: exp.Expr):
    """((left column, as written), operator read left-to-right, (right column, as written))."""
    written = match.unnest()
    operators = _COMPARISONS.get(type(written))
    operands = [written.this.unnest(), written.expression.unnest()] if operators else []
    if not operators or not all(isinstance(o, exp.Column) and qualifier(o) for o in operands):
        raise ctx.error("asof-match-condition", _SHAPE + " (qualify each column with its relation)", match)
    first, second = (_resolve(scope, o) for o in operands)
    if first.table in left.aliases and second.table in right.aliases:
        return (first, operands[0]), operators[0], (second, operands[1])
    if first.table in right.aliases and second.table in left.aliases:
        return (second, operands[1]), operators[1], (first, operands[0])
    raise ctx.error("asof-match-condition", _SHAPE, match)


def _resolve(scope: SelectScope, column: exp.Column) -> exp.Column:
    """The qualified column; `alias.ROWTIME` is the record time of a relation without such a column."""
    entry = scope.find(qualifier(column))
    if entry is not None and column.name.upper() == ROWTIME and entry.column(ROWTIME) is None:
        return col(entry.alias, ROWTIME)
    return scope.resolve_column(column)


def _check_event_time(ctx: Context, scope: SelectScope, side: Input, time: exp.Column, written: exp.Column) -> None:
    if len(side.entries) > 1:
        raise ctx.error("asof-match-column", "ASOF JOIN orders each input by its event time; this input "
                        f"already joins {', '.join(sorted(side.aliases))}, whose time is no one relation's "
                        "column: write the ASOF JOIN first", written)
    entry: ScopeEntry = scope.find(time.table)
    if (time.name == ROWTIME and entry.column(ROWTIME) is None) or (entry.timestamp or "").lower() == time.name.lower():
        return
    own = (f"its event time is {entry.alias}.{entry.timestamp}" if entry.timestamp else
           f"{entry.alias} declares no timestamp column, so its event time is {entry.alias}.ROWTIME "
           f"(the record time); or declare {time.name} as its timestamp (ksqlDB WITH (timestamp='{time.name}'), "
           f"Flink WATERMARK FOR {time.name} AS ...)")
    raise ctx.error("asof-match-column", f"MATCH_CONDITION compares event times: {time.sql()} is not the "
                    f"event time of {entry.alias}; {own}", written)
