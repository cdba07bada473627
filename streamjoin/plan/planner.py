"""SQL text -> Program: source declarations, settings and planned queries, in order.

A query is planned bottom-up: FROM relations become Sources (or Lenses views / Flink temporal
functions), each JOIN becomes a join node chosen from the inputs' kinds (joins.py), then
LATERAL, WHERE (Filter), GROUP BY (Aggregate), PARTITION BY (Repartition), the projection
(Project, with ksqlDB's key/value split) and a Sink.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Mapping

from sqlglot import exp

from streamjoin.kinds import Kind
from streamjoin.plan.catalog import Catalog, SourceDef, SourceWindow
from streamjoin.dialect import CreateRelation, SetOption, StreamJoinError, StreamQuery, ViewDefinition, parse, span
from streamjoin.dialect.depth import NESTING_HINT, recursion_headroom
from streamjoin.dialect.flavours import FLAVOURS, Flavour, flavour
from streamjoin.plan import nodes as n
from streamjoin.plan.checks import check_statement
from streamjoin.plan import kafka_keys
from streamjoin.plan.client_properties import check_kafka_tables
from streamjoin.plan.connectors import read_connector_options
from streamjoin.plan.lookup_join import check_lookup_tables
from streamjoin.plan.ddl import Properties, declared_source, relation_name, sink_formats, whole_partitions
from streamjoin.plan.relations import View, declared_kind, table_name
from streamjoin.plan.rewrites import walk
from streamjoin.plan.insert_checks import check_insert_columns, check_insert_target
from streamjoin.plan.scope import Context, ScopeEntry
from streamjoin.plan.select import plan_select
from streamjoin.plan.store_formats import stored
from streamjoin.plan.temporal_functions import declare_temporal_function, is_function_declaration
from streamjoin.plan.temporal_subqueries import rewrite_temporal_lookups
from streamjoin.dialect.types import ANY, SqlType


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
    statement: exp.Expr | None = field(default=None, repr=False)  # as parsed: where its errors point

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
    text: str = ""  # the SQL text and its file, for the positioned errors of later steps
    file: str | None = None

    @property
    def queries(self) -> list[PlannedQuery]:
        return [s for s in self.statements if isinstance(s, PlannedQuery)]


def plan_program(sql_text: str, catalog: Catalog | None = None, dialect: str | Flavour = "ksqldb",
                 file: str | None = None, settings: Mapping | None = None) -> Program:
    """Parse and plan every statement in flavour `dialect` (a name or a Flavour). `catalog` is not
    modified: `Program.catalog` is a copy updated by the source declarations and persistent
    queries of the text."""
    catalog = catalog.copy() if catalog is not None else Catalog()
    ctx = Context(sql_text, file, _flavour(sql_text, file, dialect), catalog, dict(settings or {}))
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
    program = Program([], catalog, ctx.flavour, ctx.settings, sql_text, file)
    views: dict[str, View] = {}
    declared: dict[str, exp.Expr] = {}
    for statement in parse(sql_text, ctx.flavour, file):
        ctx.statement = statement
        with recursion_headroom():
            try:
                statement = rewrite_temporal_lookups(ctx, statement)
                check_statement(ctx, statement, declared)
                program.statements.append(_plan_statement(ctx, statement, views, len(program.queries)))
            except RecursionError:  # a guard: parse() bounds the nesting far below the headroom
                raise ctx.error("too-deeply-nested", f"the statement nests {NESTING_HINT}",
                                statement) from None
    return program


def _flavour(sql_text: str, file: str | None, dialect: str | Flavour) -> Flavour:
    """The flavour; an unknown name is pointed at in the `-- dialect:` comment that gives it."""
    try:
        return flavour(dialect)
    except StreamJoinError as error:
        first_line = sql_text.split("\n", 1)[0]
        at = first_line.lower().find(str(dialect).lower()) if first_line.lstrip().startswith("--") else -1
        start, end = (at, at + len(str(dialect)) - 1) if at >= 0 else (0, 0)
        raise StreamJoinError(error.reason, error.rule, sql=sql_text, file=file, start=start, end=end) from None


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
    if is_function_declaration(statement):
        return declare_temporal_function(ctx, statement)
    if isinstance(statement, exp.Create) and statement.kind == "VIEW" and ctx.flavour.create_view:
        name = table_name(statement.this)
        ctx.catalog.views[name.lower()] = (name, statement.expression)
        return PlannedView(name, "view")
    if isinstance(statement, CreateRelation):
        name = relation_name(ctx, statement.this)
        query = _plan_query(ctx, statement.expression, views, name, statement.args["kind"].lower(),
                            Properties.of(statement), statement)
        ctx.catalog.define(_result_source(query))
        return query
    if isinstance(statement, exp.Insert):
        return _plan_insert(ctx, statement, views)
    if isinstance(statement, (exp.Query, StreamQuery)):
        stem = Path(ctx.file).stem if ctx.file else "query"
        name = stem if ctx.file and index == 0 else f"{stem}_{index + 1}"  # a file's query is named after it
        return _plan_query(ctx, statement, views, name, None, Properties({}), statement)
    start, end = span(statement)
    words = _LEADING_WORDS.match(ctx.sql, start or 0)
    raise StreamJoinError(f"{' '.join(words.group().upper().split()) or statement.key.upper()} is not a statement "
                          "streamjoin runs: a file holds CREATE STREAM|TABLE, INSERT INTO ... SELECT, SELECT and SET "
                          "statements (Lenses: also WITH name AS (...);)", "unsupported-statement",
                          sql=ctx.sql, file=ctx.file, start=start, end=end)


_LEADING_WORDS = re.compile(r"(?:(?:CREATE|DROP|ALTER)\s+(?:OR\s+REPLACE\s+)?)?\w*", re.I)  # "CREATE VIEW"


def _plan_view(ctx: Context, view: ViewDefinition, views: dict) -> PlannedView:
    name, select = view.this.name, view.expression
    kind = declared_kind(select) or "stream"
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


def _plan_insert(ctx: Context, insert: exp.Insert, views: dict) -> PlannedQuery:
    """INSERT INTO a declared relation: its topic, formats and partitions, not new ones."""
    table = insert.this if isinstance(insert.this, exp.Table) else insert.this.this
    name = relation_name(ctx, table)
    target = ctx.catalog.get(name)
    clause = insert.args.get("stored")
    if clause:  # Lenses: the formats of a topic the INSERT writes
        store = stored(ctx, clause, target is not None)
        planned = _plan_query(ctx, insert.expression, views, name, None, Properties(store.properties), insert)
        return replace(planned, root=replace(planned.root, stored_types=(store.key_type, store.value_type)))
    if target is None:
        return _plan_query(ctx, insert.expression, views, name, None, Properties({}), insert)
    check_insert_target(ctx, target.name, target.lookup, table)
    props = Properties({"kafka_topic": target.topic, "partitions": str(target.partitions) if target.partitions else None,
                        "key_format": target.key_format, "value_format": target.value_format,
                        "wrap_single_value": str(target.wrap_single_value).lower(),
                        "wrap_single_key": str(target.wrap_single_key).lower()})
    planned = _plan_query(ctx, insert.expression, views, target.name, None, props, insert, target)
    check_insert_columns(ctx, target, planned.key_columns, planned.value_columns, insert.expression)
    return planned


def _plan_query(ctx, query, views, sink_name, create_kind, props: Properties, statement,
                target: SourceDef | None = None) -> PlannedQuery:  # target: the table an INSERT INTO writes
    partition_by, emit = None, None
    if isinstance(query, StreamQuery):
        partition_by, emit, query = query.args.get("partition_by"), query.args.get("emit"), query.this
    if query is None:
        raise ctx.error("missing-query", "the statement has no query: write ... AS SELECT ... FROM ... "
                        "(INSERT INTO x SELECT ... FROM ...)", statement)
    if not isinstance(query, exp.Select):
        raise ctx.error("unsupported-statement", f"{query.key.upper()} is not a query streamjoin runs: records "
                        "come from input topics, write SELECT ... FROM ...", query)
    persistent = isinstance(statement, (CreateRelation, exp.Insert))
    planned, keys, values, result_kind, scope = plan_select(ctx, query, views, partition_by,
                                                            sink_name if persistent else None,
                                                            emit is not None and emit.name == "FINAL")
    if ctx.flavour.create_kind_must_match and create_kind and create_kind != result_kind:
        raise ctx.error("result-kind", f"Invalid result type. Your SELECT query produces a {result_kind.upper()}. "
                        f"Please use CREATE {result_kind.upper()} AS SELECT instead", statement)
    partitions = (props.partitions(ctx)
                  or whole_partitions(ctx, ctx.settings.get("output_partitions"), "output_partitions", statement)
                  or planned.partitions)
    upper = ctx.flavour.upper_case_sink_topic and create_kind
    topic = props.get("kafka_topic", "topic") or (sink_name.upper() if upper else sink_name)
    # the format names here; what the columns' types allow, once compiled (app.compiling)
    key_format, value_format = sink_formats(ctx, props, query, statement)
    timestamp = props.get("timestamp")
    if timestamp is not None:
        timestamp = next((c for c in values if c.lower() == timestamp.lower()), None)
        if timestamp is None:
            raise ctx.error("sink-timestamp", f"TIMESTAMP names {props.get('timestamp')!r}, which is not a value "
                            f"column of the result ({', '.join(values)})", props.written("timestamp") or statement)
    _check_not_an_input(ctx, planned.node, topic, props.written("kafka_topic", "topic") or statement)
    window = _result_window(ctx, planned.node, scope)
    sink = n.Sink(create_kind or result_kind, planned.node.key, planned.node, sink_name, topic,
                  int(partitions) if partitions else None, key_format, value_format, declared_kind(query),
                  props.flag("wrap_single_value", True), timestamp, window,
                  props.flag("wrap_single_key", kafka_keys.key_is_row(props)))
    if target is not None:
        sink = replace(sink, bootstrap=target.bootstrap, client_properties=target.client_properties)
    elif isinstance(statement, CreateRelation):  # its connector options (Flink), read as a declaration's
        connector = read_connector_options(ctx, props, props.values, statement.this)
        check_insert_target(ctx, sink_name, connector.lookup, statement.this)
        sink = replace(sink, bootstrap=connector.bootstrap, client_properties=connector.properties)
    check_lookup_tables(ctx, planned.node, statement)
    check_kafka_tables(ctx, sink, statement)
    start, end = span(statement)
    written = ctx.sql[start:end + 1] if start is not None else ""
    return PlannedQuery(sink, tuple(keys), tuple(values), {e.alias: e for e in scope.entries}, ctx.flavour,
                        written, statement)


def _check_not_an_input(ctx: Context, node: n.PlanNode, topic: str, where: exp.Expr) -> None:
    """A query writing a topic it reads would read its own results back, forever."""
    read = next((s.source for s in walk(node) if isinstance(s, n.Source) and s.source.topic == topic), None)
    if read is not None:
        raise ctx.error("output-is-input", f"the query writes topic {topic!r}, which it reads ({read.name}): every "
                        "result would be read again as input; write to another topic (KAFKA_TOPIC='...' / "
                        "'topic' = '...', or another relation name)", where)


def _result_window(ctx: Context, project: n.Project, scope) -> SourceWindow | None:
    """The windowed key of a result: a windowed aggregation's, or its windowed sources'."""
    bounds = set(ctx.flavour.window_columns)
    if not any(k.name in bounds for k in project.key):
        return None
    window = project.child.window if isinstance(project.child, n.Aggregate) else None
    if window is not None:  # a session's bounds are its rows' times: no size
        return SourceWindow(window.kind, None if window.kind == "SESSION" else window.size_ms)
    return next((e.source.window for e in scope.entries if e.source and e.source.window), None)


def _result_source(query: PlannedQuery) -> SourceDef:
    """The relation a persistent query creates, so later statements can read it: a column of a
    declared column's type, else ANY (its JSON as written); a key of unknown type is written as
    JSON (see runtime.compiler.sink_binding), so it is read as JSON."""
    exprs = {**query.project.key_columns, **query.project.value_columns}
    columns = {name: _declared_type(query, exprs[name]) for name in (*query.key_columns, *query.value_columns)}
    kind = query.sink.kind
    untyped_key = any(columns[k].name == "ANY" for k in query.key_columns)
    return SourceDef(query.sink.name, kind, query.sink.topic, query.sink.partitions,
                     tuple(query.key_columns) if kind == Kind.TABLE or query.key_columns else (), columns,
                     "JSON" if untyped_key or len(query.key_columns) > 1 else query.sink.key_format,
                     query.sink.value_format, query.sink.timestamp,
                     wrap_single_value=query.sink.wrap_single_value, window=query.sink.window,
                     wrap_single_key=query.sink.wrap_single_key, bootstrap=query.sink.bootstrap,
                     client_properties=query.sink.client_properties)


def _declared_type(query: PlannedQuery, expr: exp.Expr) -> SqlType:
    entry = query.scope.get(expr.table) if isinstance(expr, exp.Column) and expr.table else None
    declared = entry.columns.get(entry.column(expr.name)) if entry and entry.column(expr.name) else None
    pseudo = dict(query.flavour.pseudo_columns) if entry else {}
    if declared is None and expr.name.upper() in pseudo:
        declared = SqlType.parse(pseudo[expr.name.upper()])
    return declared if declared is not None and not declared.proctime else ANY
