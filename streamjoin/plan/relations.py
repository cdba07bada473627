"""FROM-clause relations -> plan inputs: catalog sources, Lenses views, s-Server OVER windows and
Flink temporal table functions (source declarations are ddl.py's)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sqlglot import exp

from streamjoin.kinds import Kind
from streamjoin.plan.catalog import SourceDef
from streamjoin.dialect.nodes import SourceTable
from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.lookup_nodes import LookupTable
from streamjoin.plan.inputs import Input
from streamjoin.plan.scope import Context, ScopeEntry, col


@dataclass
class View:
    """A named relation defined by an earlier statement (Lenses `WITH name AS (...)`): either a
    catalog source read as `kind`, or a planned sub-query with its output columns."""

    name: str
    kind: str
    source: SourceDef | None = None
    planned: Input | None = None
    columns: dict | None = None


VIEW_HINT = "CREATE STREAM name AS SELECT ...; in Lenses WITH name AS (SELECT ...);"


def table_name(table: exp.Table) -> str:
    return ".".join(p.name for p in (table.args.get("catalog"), table.args.get("db"), table.args.get("this")) if p)


def declared_kind(select: exp.Expr | None) -> str | None:
    """"stream" or "table" where a SELECT says which it is (SELECT STREAM|TABLE), else None."""
    modifiers = select.args.get("operation_modifiers") or [] if isinstance(select, exp.Select) else []
    names = {m.name.upper() for m in modifiers}
    return "stream" if "STREAM" in names else "table" if "TABLE" in names else None


def source_input(ctx: Context, alias: str, source: SourceDef, kind: str | None = None,
                 window: n.RelationWindow | None = None) -> Input:
    if kind in (Kind.STREAM, Kind.TABLE) and (kind == Kind.STREAM) != (source.kind == Kind.STREAM):
        source = replace(source, kind=kind)  # read as the query says (a Lenses view or SELECT kind)
    entry = ScopeEntry.of_source(alias, source, kind)
    node_kind = Kind.STREAM if entry.kind == Kind.STREAM else Kind.TABLE
    key = tuple(col(alias, k) for k in source.key_columns)
    names = {key[0].sql()} if len(key) == 1 else set()
    if source.window is not None:  # a windowed key: the window's bounds are part of the key
        key += tuple(col(alias, bound) for bound in ctx.flavour.window_columns)
    if source.lookup is not None:  # a database table: only a lookup join reads it (plan.lookup_join)
        return Input(LookupTable(Kind.TABLE, key, alias, source, dict(source.columns)), [entry], names, None)
    node = n.Source(node_kind, key, alias, source, window, dict(source.columns))
    return Input(node, [entry], names if source.window is None else set(), source.partitions, window)


def relation_input(ctx: Context, table: exp.Expr, views: dict[str, View], windows: dict) -> Input:
    if not isinstance(table, exp.Table):  # a subquery, VALUES, UNNEST ...
        raise ctx.error("subquery", "a subquery is not a relation here: declare it as its own query "
                        f"({VIEW_HINT}) and read that by name", table)
    name = table_name(table)
    alias = table.alias or name
    window = _relation_window(ctx, table.args.get("window"), windows) if isinstance(table, SourceTable) else None
    view = views.get(name.lower())
    if view and view.source is not None:
        return source_input(ctx, alias if table.alias else view.name, view.source, view.kind, window)
    if view:
        inner = view.planned
        entry = ScopeEntry(alias, dict(view.columns), view.kind)
        if not isinstance(inner.node, n.Project):
            return Input(inner.node, [entry], set(), inner.partitions, window)
        # Read under its alias, the view's key is its projected key column (`v._key`), not the
        # expression inside it (`orders._key`), which the reading query cannot name.
        key = tuple(col(alias, name) for name in inner.node.key_columns)
        if len(key) != len(inner.node.key):
            return Input(replace(inner.node, alias=alias), [entry], set(), inner.partitions, window)
        node = replace(inner.node, alias=alias, key=key)
        # a view that re-keys (`x AS _key`) is not partitioned by its key yet: a join repartitions it
        keyed = len(key) == 1 and not inner.node.key_from_columns
        return Input(node, [entry], {key[0].sql()} if keyed else set(), inner.partitions, window)
    source = ctx.catalog.get(name)
    if source is None:
        raise ctx.error("unknown-relation", f"unknown stream or table {name!r}", table)
    read_as = declared_kind(table.find_ancestor(exp.Select)) if ctx.flavour.select_kind_reads_sources else None
    if read_as == Kind.TABLE and not source.key_columns:
        raise ctx.error("table-primary-key", f"SELECT TABLE reads {name} as a table, and it has no key: declare "
                        "its `_key` column (`_key INT KEY`), or read it with SELECT STREAM", table)
    return source_input(ctx, alias, source, read_as, window)


def temporal_function(ctx: Context, lateral: exp.Lateral) -> tuple[dict, str, exp.Expr]:
    """Flink `LATERAL TABLE (Rates(o.rowtime)) [AS r]`: the registered function's spec, the alias
    and the (unresolved) time argument."""
    call = lateral.this
    inner = call.expressions[0] if isinstance(call, exp.Anonymous) and call.name.upper() == "TABLE" else call
    fn_name = inner.name if isinstance(inner, (exp.Anonymous, exp.Func)) else ""
    spec = ctx.catalog.temporal_functions.get(fn_name.lower())
    if spec is None or not inner.expressions:
        raise ctx.error("unknown-function", f"unknown temporal table function {fn_name or inner.sql()!r}", lateral)
    return spec, lateral.alias or fn_name, inner.expressions[0]


def temporal_function_input(ctx: Context, lateral: exp.Lateral, spec: dict, alias: str) -> Input:
    """The function's history table read as a versioned table keyed by its primary key."""
    history = ctx.catalog.get(spec["history_table"])
    if history is None:
        raise ctx.error("unknown-relation", f"unknown history table {spec['history_table']!r}", lateral)
    proctime = history.proctime and history.proctime.lower() == spec["time_attribute"].lower()
    versioned = SourceDef(history.name, "versioned_table", history.topic, history.partitions,
                          (spec["primary_key"],), history.columns, history.key_format, history.value_format,
                          None if proctime else spec["time_attribute"], history.proctime,
                          key_in_value=not history.key_columns)
    return source_input(ctx, alias, versioned)


def versioned_view(history: Input, spec: dict) -> Input:
    """A view's rows (e.g. a filtered history) read as the function's versioned table: keyed by
    its primary key, versions ordered by its time attribute."""
    entry = history.entries[0]
    time = entry.column(spec["time_attribute"])
    versioned = replace(entry, kind="versioned_table", key_columns=(entry.column(spec["primary_key"]),),
                        timestamp=None if time == entry.proctime else time)
    return replace(history, entries=[versioned])


def _relation_window(ctx: Context, window, named: dict) -> n.RelationWindow | None:
    if window is None:
        return None
    if isinstance(window, exp.Var):
        if window.name.lower() not in named:
            known = f"; the query defines {', '.join(sorted(named))}" if named else ""
            raise ctx.error("unknown-window", f"unknown window {window.name!r}: define it with "
                            f"WINDOW {window.name} AS (RANGE INTERVAL '1' MINUTE PRECEDING){known}", window)
        window = named[window.name.lower()]
    unit = window.args["kind"].upper()
    preceding = _bound(ctx, window, "start", unit)
    following = _bound(ctx, window, "end", unit)
    if following > preceding:
        raise ctx.error("window-bound", "the window ends before it starts: its first bound must reach back "
                        "at least as far as its second", window)
    return n.RelationWindow(unit, preceding, following)


def _bound(ctx: Context, window: exp.WindowSpec, which: str, unit: str) -> int:
    """How far back one bound of an s-Server window reaches: rows (ROWS) or milliseconds (RANGE)."""
    value = window.args.get(which)
    if value is None or str(value).upper() == "CURRENT ROW":
        return 0
    where = value if isinstance(value, exp.Expr) else window
    example = "ROWS 5 PRECEDING" if unit == "ROWS" else "RANGE INTERVAL '1' MINUTE PRECEDING"
    if (window.args.get(f"{which}_side") or "").upper() != "PRECEDING":
        raise ctx.error("window-bound", f"a join window looks back from each row: write {example}", where)
    if unit == "ROWS" and isinstance(value, exp.Literal) and re.fullmatch(r"\d+", value.name):
        return int(value.name)
    millis = cond.interval_ms(value) if unit == "RANGE" and isinstance(value, exp.Expr) else None
    if millis is None:
        raise ctx.error("window-bound", f"unsupported window bound {where.sql() if where is value else value}: "
                        f"write {example}", where)
    if millis < 0:
        raise ctx.error("window-bound", f"a window bound cannot be negative: write {example}", where)
    return millis
