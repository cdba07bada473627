"""FROM-clause relations -> plan inputs: catalog sources, Lenses views, s-Server OVER windows,
Flink temporal table functions, and source declarations from DDL."""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlglot import exp

from streamjoin.plan.catalog import SourceDef
from streamjoin.dialect.nodes import CreateRelation, SourceTable
from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.inputs import Input
from streamjoin.plan.scope import Context, ScopeEntry, col
from streamjoin.dialect.types import SqlType


@dataclass
class View:
    """A named relation defined by an earlier statement (Lenses `WITH name AS (...)`): either a
    catalog source read as `kind`, or a planned sub-query with its output columns."""

    name: str
    kind: str
    source: SourceDef | None = None
    planned: Input | None = None
    columns: dict | None = None


def table_name(table: exp.Table) -> str:
    return ".".join(p.name for p in (table.args.get("catalog"), table.args.get("db"), table.args.get("this")) if p)


def source_input(ctx: Context, alias: str, source: SourceDef, kind: str | None = None,
                 window: n.RelationWindow | None = None) -> Input:
    entry = ScopeEntry.of_source(alias, source, kind)
    node_kind = "stream" if entry.kind == "stream" else "table"
    key = tuple(col(alias, k) for k in source.key_columns)
    node = n.Source(node_kind, key, alias, source, window, dict(source.columns))
    return Input(node, [entry], {key[0].sql()} if len(key) == 1 else set(), source.partitions, window)


def relation_input(ctx: Context, table: exp.Table, views: dict[str, View], windows: dict) -> Input:
    name = table_name(table)
    alias = table.alias or name
    window = _relation_window(ctx, table.args.get("window"), windows) if isinstance(table, SourceTable) else None
    view = views.get(name.lower())
    if view and view.source is not None:
        return source_input(ctx, alias if table.alias else view.name, view.source, view.kind, window)
    if view:
        inner = view.planned
        entry = ScopeEntry(alias, dict(view.columns), view.kind)
        node = replace(inner.node, alias=alias) if isinstance(inner.node, n.Project) else inner.node
        return Input(node, [entry], set(), inner.partitions, window)
    source = ctx.catalog.get(name)
    if source is None:
        raise ctx.error("unknown-relation", f"unknown stream or table {name!r}", table)
    return source_input(ctx, alias, source, None, window)


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
            raise ctx.error("unknown-window", f"unknown window {window.name!r}", window)
        window = named[window.name.lower()]
    unit = window.args["kind"].upper()
    return n.RelationWindow(unit, _bound(ctx, window.args.get("start"), unit),
                            _bound(ctx, window.args.get("end"), unit))


def _bound(ctx: Context, value, unit: str) -> int:
    if value is None or value == "CURRENT ROW":
        return 0
    if unit == "ROWS" and isinstance(value, exp.Literal):
        return int(value.name)
    millis = cond.interval_ms(value) if isinstance(value, exp.Expr) else None
    if millis is None:
        raise ctx.error("window-bound", f"unsupported window bound {value}", value if isinstance(value, exp.Expr) else None)
    return millis


def declared_source(ctx: Context, create: CreateRelation) -> SourceDef:
    """CREATE STREAM|TABLE name (columns ...) WITH (...) in the ksqlDB, Flink or s-Server form."""
    name = table_name(create.this)
    props = {p.name: p.args["value"].name for p in create.args.get("properties") or []}
    columns, keys, virtual, proctime = {}, [], [], None
    for column in create.args.get("columns") or []:
        cname = column.this.name
        if column.args.get("computed") is not None:
            if "PROCTIME" in column.args["computed"].sql().upper():
                columns[cname], proctime = SqlType.parse("TIMESTAMP_LTZ(3) PROCTIME"), cname
            continue
        columns[cname] = SqlType.parse(column.args["type_text"].name)
        if column.args.get("key"):
            keys.append(cname)
        if column.args.get("metadata") or column.args.get("virtual"):
            virtual.append(cname)
    keys += [k.name for k in create.args.get("primary_key") or []]
    watermarks = create.args.get("watermarks") or []
    timestamp = watermarks[0].this.name if watermarks else props.get("timestamp")
    delay = None
    if watermarks and isinstance(watermarks[0].expression, exp.Sub):
        delay = cond.interval_ms(watermarks[0].expression.right.unnest())
    kind = create.args["kind"].lower()
    if ctx.flavour.ddl_kind_from_key:  # no key = append-only stream; key + watermark = versioned table
        kind = "stream" if not keys else ("versioned_table" if timestamp else "table")
    key_format = props.get("key_format") or props.get("key.format") or "KAFKA"
    value_format = props.get("value_format") or props.get("value.format") or props.get("format") or "JSON"
    partitions = props.get("partitions")
    try:
        return SourceDef(name, kind, props.get("kafka_topic") or props.get("topic") or name,
                         int(partitions) if partitions else None, tuple(keys), columns,
                         key_format.upper(), value_format.upper(), timestamp, proctime, delay, tuple(virtual))
    except ValueError as error:
        raise ctx.error("source-definition", str(error), create.this) from None
