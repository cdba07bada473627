"""Flink's windowing: a windowing table function in FROM, window aggregation (GROUP BY
window_start, window_end, ...) and the window join (ON L.window_start = R.window_start AND
L.window_end = R.window_end AND ...), each over relations that carry their windows.

    TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) L
      -> WindowAssign(L, rowtime, TUMBLE 5 s): L's rows with window_start / window_end / window_time
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from streamjoin.kinds import Kind
from streamjoin.dialect.nodes import WindowTableFunction
from streamjoin.dialect.types import TIMESTAMP, parse_type
from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.inputs import Input
from streamjoin.plan.scope import Context, ScopeEntry, WindowedBy, col
from streamjoin.plan.window_nodes import WindowAggregate, WindowAssign, WindowSpec

_LTZ = parse_type("TIMESTAMP_LTZ(3)")


def windowed_table(table: exp.Table, function: WindowTableFunction) -> exp.Table:
    """The windowed relation as the function names it: under the function's alias, if any."""
    if not function.alias:
        return table
    aliased = table.copy()
    aliased.set("alias", exp.TableAlias(this=exp.to_identifier(function.alias)))
    return aliased


def window_input(ctx: Context, function: WindowTableFunction, inner: Input) -> Input:
    """The rows of `inner` in the function's windows, with the window columns added."""
    if len(inner.entries) != 1 or inner.kind != Kind.STREAM:
        raise ctx.error("window-function", "a windowing table function reads one append-only stream", function)
    entry = inner.entries[0]
    time_name = entry.column(function.args["time_column"].name)
    if time_name is None or time_name != entry.timestamp:
        raise ctx.error("window-function", f"DESCRIPTOR({function.args['time_column'].name}) must name the event-"
                        f"time attribute of {entry.alias} ({entry.timestamp or 'it has none'})", function)
    window = WindowSpec(function.args["kind"], _ms(ctx, function, "size"),
                        _ms(ctx, function, "step") if function.args.get("step") else _ms(ctx, function, "size"),
                        _ms(ctx, function, "offset") if function.args.get("offset") else 0)
    if window.size_ms <= 0 or window.step_ms <= 0 or (window.kind == "CUMULATE" and window.size_ms % window.step_ms):
        raise ctx.error("window-function", f"{window.kind} needs positive sizes (CUMULATE: a size that is a "
                        "multiple of its step)", function)
    ltz = entry.columns[time_name] is not None and entry.columns[time_name].name == "TIMESTAMP_LTZ"
    zone = str(ctx.settings.get("table.local-time-zone") or "UTC") if ltz else None
    node = WindowAssign("stream", inner.node.key, inner.node, entry.alias, col(entry.alias, time_name), window, zone)
    columns = {**entry.columns, "window_start": TIMESTAMP, "window_end": TIMESTAMP,
               "window_time": _LTZ if ltz else TIMESTAMP}
    windowed = replace(entry, columns=columns, windowed=WindowedBy(window))
    return replace(inner, node=node, entries=[windowed])


def _ms(ctx: Context, function: WindowTableFunction, arg: str) -> int:
    millis = cond.interval_ms(function.args[arg])
    if millis is None:
        raise ctx.error("window-function", f"the {arg} of {function.args['kind']} must be an INTERVAL literal",
                        function.args[arg])
    return millis


def window_aggregate(entries: list[ScopeEntry], child: n.PlanNode, group_by: list[exp.Expr],
                     aggregates: dict, having: exp.Expr | None = None) -> WindowAggregate | None:
    """GROUP BY that holds a windowed relation's window_start and window_end: window aggregation."""
    grouped = {g.sql() for g in group_by}
    for entry in entries:
        if entry.windowed and {col(entry.alias, c).sql() for c in (entry.windowed.start, entry.windowed.end)} <= grouped:
            return WindowAggregate("stream", tuple(group_by), child, tuple(group_by), aggregates, having,
                                   window_end=col(entry.alias, entry.windowed.end))
    return None


def window_join(ctx: Context, left: Input, right: Input, split, where) -> dict | None:
    """The WindowTvfJoin fields when the condition equates the two inputs' window_start and
    window_end (None when it equates neither)."""
    pairs = {(l.sql(), r.sql()) for l, r in split.pairs}
    for lentry in (e for e in left.entries if e.windowed):
        for rentry in (e for e in right.entries if e.windowed):
            equal = [(col(lentry.alias, getattr(lentry.windowed, c)).sql(),
                      col(rentry.alias, getattr(rentry.windowed, c)).sql()) in pairs for c in ("start", "end")]
            if not any(equal):
                continue
            if not all(equal):
                raise ctx.error("window-join", "a window join equates both window_start and window_end of its "
                                "inputs", where)
            if lentry.windowed.window != rentry.windowed.window:
                raise ctx.error("window-join", "a window join needs the same windows on both inputs", where)
            return dict(left_window_end=col(lentry.alias, lentry.windowed.end),
                        right_window_end=col(rentry.alias, rentry.windowed.end), window=lentry.windowed.window)
    return None



# Flink's group window functions in GROUP BY (argument count: time, [slide,] size), and the
# auxiliary functions that read the group's window (TUMBLE_END(ts, INTERVAL ...) ...).
GROUP_WINDOWS = {"TUMBLE": 2, "HOP": 3}
_AUXILIARY = {"START": "window_start", "END": "window_end", "ROWTIME": "window_time"}


def group_window(ctx: Context, select: exp.Select, scope, current: Input):
    """`GROUP BY TUMBLE(t, size)` / `HOP(t, slide, size)`, ...: the rows windowed on the time
    attribute t, grouped by their window, the auxiliary functions read as window columns.
    Returns (windowed input, the SELECT rewritten onto those columns), or None."""
    group = select.args.get("group")
    calls = [g for g in group.expressions if isinstance(g, exp.Anonymous) and g.name.upper() in GROUP_WINDOWS]
    if not calls:
        return None
    call = calls[0]
    kind = call.name.upper()
    if len(calls) > 1 or len(call.expressions) != GROUP_WINDOWS[kind]:
        raise ctx.error("group-window", f"GROUP BY takes one {kind}(time, {'slide, ' if kind == 'HOP' else ''}size)",
                        call)
    time = scope.resolve(call.expressions[0])
    entry = scope.find(time.table) if isinstance(time, exp.Column) else None
    if entry is None or (entry.timestamp or "").lower() != time.name.lower():
        raise ctx.error("group-window", f"{kind} groups by an event-time attribute; {call.expressions[0].sql()} "
                        "is not one", call)
    sizes = [cond.interval_ms(a) for a in call.expressions[1:]]
    if any(size is None or size <= 0 for size in sizes):
        raise ctx.error("group-window", f"the sizes of {kind} are positive INTERVAL literals", call)
    window = WindowSpec(kind, sizes[-1], sizes[0])
    ltz = entry.columns.get(entry.timestamp) is not None and entry.columns[entry.timestamp].name == "TIMESTAMP_LTZ"
    zone = str(ctx.settings.get("table.local-time-zone") or "UTC") if ltz else None
    node = WindowAssign("stream", current.node.key, current.node, entry.alias, time, window, zone)
    entry.columns = {**entry.columns, "window_start": TIMESTAMP, "window_end": TIMESTAMP,
                     "window_time": _LTZ if ltz else TIMESTAMP}
    entry.windowed = WindowedBy(window)
    return replace(current, node=node), _onto_window_columns(ctx, select, call, entry.alias)


def _onto_window_columns(ctx: Context, select: exp.Select, call: exp.Anonymous, alias: str) -> exp.Select:
    rewritten = select.copy()

    def auxiliary(node: exp.Expr) -> exp.Expr:
        name = node.name.upper() if isinstance(node, exp.Anonymous) else ""
        prefix, _, part = name.partition("_")
        if prefix == call.name.upper() and part in _AUXILIARY:
            return col(alias, _AUXILIARY[part])
        return node

    expressions = []
    for index, item in enumerate(rewritten.expressions):
        replaced = item.transform(auxiliary)
        if not isinstance(item, exp.Alias) and replaced.sql() != item.sql():  # keep the unnamed column's name
            replaced = exp.alias_(replaced, f"{ctx.flavour.expression_column_prefix}{index}")
        expressions.append(replaced)
    rewritten.set("expressions", expressions)
    group = [g for g in rewritten.args["group"].expressions if g.sql() != call.sql()]
    rewritten.args["group"].set("expressions", [col(alias, "window_start"), col(alias, "window_end"), *group])
    return rewritten
