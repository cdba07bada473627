"""SQL text -> Program: source declarations, settings and planned queries, in order.

A query is planned bottom-up: FROM relations become Sources (or Lenses views / Flink temporal
functions), each JOIN becomes a join node chosen from the inputs' kinds (joins.py), then
LATERAL, WHERE (Filter), GROUP BY (Aggregate), PARTITION BY (Repartition), the projection
(Project, with ksqlDB's key/value split) and a Sink.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from sqlglot import exp

from streamjoin.plan.catalog import Catalog, SourceDef
from streamjoin.dialect import CreateRelation, SetOption, StreamQuery, ViewDefinition, parse, span
from streamjoin.dialect.flavours import FLAVOURS, Flavour, flavour
from streamjoin.plan import nodes as n
from streamjoin.plan.relations import View, declared_source, table_name
from streamjoin.plan.scope import Context, ScopeEntry
from streamjoin.plan.select import plan_select
from streamjoin.dialect.types import SqlType


@dataclass(frozen=True)
class SourceDeclaration:
    source: SourceDef


@dataclass(frozen=True)
class Setting:
    name: str
    value: str


@dataclass(frozen=True, eq=False)
class PlannedView:
    """Lenses `WITH name AS (...)`: a named relation later statements read."""

    name: str
    kind: str


@dataclass(frozen=True, eq=False)
class PlannedQuery:
    """A query ending in `root` (a Sink). key_columns / value_columns: the output record's key and
    value column names, in order. scope: alias -> ScopeEntry of every relation the query reads."""

    root: n.Sink
    key_columns: tuple[str, ...]
    value_columns: tuple[str, ...]
    scope: Mapping[str, ScopeEntry]
    flavour: Flavour
    text: str = ""

    @property
    def sink(self) -> n.Sink:
        return self.root

    @property
    def project(self) -> n.Project:
        return self.root.child


@dataclass
class Program:
    statements: list = field(default_factory=list)
    catalog: Catalog | None = None
    flavour: Flavour = FLAVOURS["ksqldb"]
    settings: dict = field(default_factory=dict)

    @property
    def queries(self) -> list[PlannedQuery]:
        return [s for s in self.statements if isinstance(s, PlannedQuery)]


def plan_program(sql_text: str, catalog: Catalog | None = None, dialect: str | Flavour = "ksqldb",
                 file: str | None = None, settings: Mapping | None = None) -> Program:
    """Parse and plan every statement in flavour `dialect` (a name or a Flavour). `catalog` is not
    modified: `Program.catalog` is a copy updated by the source declarations and persistent
    queries of the text."""
    catalog = catalog.copy() if catalog is not None else Catalog()
    ctx = Context(sql_text, file, flavour(dialect), catalog, dict(settings or {}))
    structured = ctx.flavour.multi_column_key_format
    for source in list(catalog) if structured else ():
        if len(source.key_columns) > 1 and source.key_format == "KAFKA":  # the default holds one column
            catalog.define(replace(source, key_format=structured))
    for name, delay in (ctx.settings.get("watermark_delay_ms") or {}).items():
        declared = catalog.get(name)  # `WATERMARK FOR ts AS ts - INTERVAL ...` stated as a case setting
        if declared is not None:
            catalog.define(replace(declared, watermark_delay_ms=int(delay)))
    function = ctx.settings.get("temporal_table_function")
    if function:
        catalog.temporal_functions[function["name"].lower()] = function
    program = Program([], catalog, ctx.flavour, ctx.settings)
    views: dict[str, View] = {}
    for statement in parse(sql_text, ctx.flavour, file):
        program.statements.append(_plan_statement(ctx, statement, views, len(program.queries)))
    return program


def _plan_statement(ctx: Context, statement: exp.Expr, views: dict, index: int):
    if isinstance(statement, SetOption):
        ctx.settings[statement.option] = statement.value
        return Setting(statement.option, statement.value)
    if isinstance(statement, CreateRelation) and statement.args.get("expression") is None:
        source = declared_source(ctx, statement)
        ctx.catalog.define(source)
        return SourceDeclaration(source)
    if isinstance(statement, ViewDefinition):
        return _plan_view(ctx, statement, views)
    if isinstance(statement, exp.Create) and statement.kind == "VIEW" and ctx.flavour.create_view:
        name = table_name(statement.this)
        ctx.catalog.views[name.lower()] = (name, statement.expression)
        return PlannedView(name, "view")
    if isinstance(statement, CreateRelation):
        props = {p.name: p.args["value"].name for p in statement.args.get("properties") or []}
        name = table_name(statement.this)
        query = _plan_query(ctx, statement.expression, views, name, statement.args["kind"].lower(), props,
                            statement)
        ctx.catalog.define(_result_source(query))
        return query
    if isinstance(statement, exp.Insert):
        target = statement.this if isinstance(statement.this, exp.Table) else statement.this.this
        return _plan_query(ctx, statement.expression, views, table_name(target), None, {}, statement)
    if isinstance(statement, (exp.Query, StreamQuery)):
        stem = Path(ctx.file).stem if ctx.file else "query"
        name = stem if ctx.file and index == 0 else f"{stem}_{index + 1}"  # a file's query is named after it
        return _plan_query(ctx, statement, views, name, None, {}, statement)
    raise ctx.error("unsupported-statement", f"unsupported statement {statement.key.upper()}", statement)


def _plan_view(ctx: Context, view: ViewDefinition, views: dict) -> PlannedView:
    name, select = view.this.name, view.expression
    kind = _declared_kind(select) or "stream"
    source_table = select.args.get("from_").this if select.args.get("from_") else None
    simple = (isinstance(source_table, exp.Table) and not select.args.get("joins") and not select.args.get("where")
              and all(isinstance(e, exp.Star) for e in select.expressions))
    if simple:
        source = ctx.catalog.get(table_name(source_table))
        if source is None:
            raise ctx.error("unknown-relation", f"unknown stream or table {table_name(source_table)!r}", source_table)
        views[name.lower()] = View(name, kind, source=source)
    else:
        planned, keys, values, result_kind, _ = plan_select(ctx, select, views, None)
        views[name.lower()] = View(name, kind or result_kind, planned=planned,
                                   columns={c: None for c in (*keys, *values)})
    return PlannedView(name, kind)


def _declared_kind(select: exp.Expr) -> str | None:
    modifiers = {m.name.upper() for m in select.args.get("operation_modifiers") or []} if isinstance(select, exp.Select) else set()
    return "stream" if "STREAM" in modifiers else "table" if "TABLE" in modifiers else None


def _plan_query(ctx, query, views, sink_name, create_kind, props, statement) -> PlannedQuery:
    partition_by, emit = None, None
    if isinstance(query, StreamQuery):
        partition_by, emit, query = query.args.get("partition_by"), query.args.get("emit"), query.this
    if not isinstance(query, exp.Select):
        raise ctx.error("unsupported-statement", "expected a SELECT query", query)
    planned, keys, values, result_kind, scope = plan_select(ctx, query, views, partition_by)
    if ctx.flavour.create_kind_must_match and create_kind and create_kind != result_kind:
        raise ctx.error("result-kind", f"Invalid result type. Your SELECT query produces a {result_kind.upper()}. "
                        f"Please use CREATE {result_kind.upper()} AS SELECT instead", statement)
    partitions = props.get("partitions") or ctx.settings.get("output_partitions") or planned.partitions
    upper = ctx.flavour.upper_case_sink_topic and create_kind
    topic = props.get("kafka_topic") or (sink_name.upper() if upper else sink_name)
    sink = n.Sink(create_kind or result_kind, planned.node.key, planned.node, sink_name, topic,
                  int(partitions) if partitions else None,
                  (props.get("key_format") or "KAFKA").upper(), (props.get("value_format") or "JSON").upper(),
                  _declared_kind(query))
    start, end = span(statement)
    text = ctx.sql[start:end + 1] if start is not None else ""
    return PlannedQuery(sink, tuple(keys), tuple(values), {e.alias: e for e in scope.entries}, ctx.flavour, text)


def _result_source(query: PlannedQuery) -> SourceDef:
    """The relation a persistent query creates, so later statements can read it."""
    columns = {c: SqlType("UNKNOWN") for c in (*query.key_columns, *query.value_columns)}
    kind = query.sink.kind
    return SourceDef(query.sink.name, kind, query.sink.topic, query.sink.partitions,
                     tuple(query.key_columns) if kind == "table" or query.key_columns else (), columns,
                     query.sink.key_format, query.sink.value_format)
