"""Source declarations -> SourceDef: `CREATE STREAM|TABLE name (columns) WITH (...)` in the
ksqlDB, Flink and s-Server forms, and the WITH properties of a declaration or of a persistent
query's sink. Every mistake is a positioned error at the text that makes it: a column type, a
key, a watermark, a property, a format that cannot hold the columns.

Names: an unquoted identifier is folded to upper case where the flavour does so
(`upper_case_identifiers`); a back-quoted or double-quoted one keeps its case.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sqlglot import exp

from streamjoin.kinds import Kind
from streamjoin.dialect.durations import interval_millis
from streamjoin.dialect.flavours import Flavour
from streamjoin.dialect.formats import (
    CHANGELOG_FORMATS,
    FORMAT_ALIASES,
    RECORD_TIMESTAMP,
    event_time_problem,
    format_problem,
    header_problem,
    metadata_problem,
)
from streamjoin.dialect.nodes import CreateRelation, SourceColumn
from streamjoin.dialect.types import SqlType, TypeSyntaxError
from streamjoin.plan import conditions as cond
from streamjoin.plan import kafka_keys, registry_columns
from streamjoin.plan.catalog import SourceDef, SourceWindow
from streamjoin.plan.connectors import read_connector_options
from streamjoin.plan.scope import Context

PROCTIME = SqlType.parse("TIMESTAMP_LTZ(3) PROCTIME")


def fold(ctx: Context, identifier: exp.Identifier | str) -> str:
    """A declared name as the flavour stores it."""
    if isinstance(identifier, str):
        return identifier.upper() if ctx.flavour.upper_case_identifiers else identifier
    quoted = identifier.quoted
    return identifier.name.upper() if ctx.flavour.upper_case_identifiers and not quoted else identifier.name


def relation_name(ctx: Context, table: exp.Table) -> str:
    """The (possibly dotted) relation name of `table`, each part folded."""
    parts = (table.args.get("catalog"), table.args.get("db"), table.args.get("this"))
    return ".".join(fold(ctx, p) for p in parts if p)


@dataclass(frozen=True)
class Properties:
    """The WITH (...) of a declaration or a sink, by lower-cased name: values as text, and the
    properties as written (`nodes`, absent for a sink's properties taken from the catalog)."""

    values: dict[str, str | None]
    nodes: dict[str, exp.Property] = field(default_factory=dict)

    @classmethod
    def of(cls, node: exp.Expr | None) -> "Properties":
        nodes = {p.name: p for p in (node.args.get("properties") or [])} if node is not None else {}
        return cls({name: _text(p.args["value"]) for name, p in nodes.items()}, nodes)

    def get(self, *names: str) -> str | None:
        return next((self.values[n] for n in names if self.values.get(n) is not None), None)

    def written(self, *names: str) -> exp.Expr | None:
        """The value as written of the first of `names` that is given (for positioned errors)."""
        return next((self.nodes[n].args["value"] for n in names if n in self.nodes), None)

    def flag(self, name: str, default: bool) -> bool:
        value = self.values.get(name)
        return default if value is None else value.lower() in ("true", "1", "yes")

    @staticmethod
    def format_names(flavour: Flavour, side: str) -> tuple[str, ...]:
        """The properties that name `side`'s format, the first given wins. ksqlDB's FORMAT names
        both at once; Flink's `format` is the value format only."""
        if side == "key":
            return ("key_format", "key.format") + (("format",) if flavour.format_property_covers_key else ())
        return ("value_format", "value.format", "format")

    def format(self, ctx: Context, side: str, columns, fallback: exp.Expr, default: str | None = None) -> str:
        """`side`'s format (unless given: `default`, else KAFKA for a key and JSON for a value),
        checked against the columns it holds: a positioned `format` error at the property that
        names it, else at `fallback` (what brought the columns)."""
        names = self.format_names(ctx.flavour, side)
        fmt = (self.get(*names) or default or registry_columns.default_format(ctx, side)).upper()
        problem = registry_columns.flavour_problem(ctx, side, fmt)
        fmt = FORMAT_ALIASES.get(fmt, fmt)
        problem = problem or format_problem(side, fmt, columns)
        if problem:
            where = self.written(*names)
            raise ctx.error("format", problem, where if where is not None else fallback)
        return fmt

    def partitions(self, ctx: Context) -> int | None:
        """`PARTITIONS=n`: a whole number, 1 or more."""
        return whole_partitions(ctx, self.get("partitions"), "PARTITIONS", self.written("partitions"))

    def window(self, ctx: Context, where: exp.Expr) -> SourceWindow | None:
        """ksqlDB WINDOW_TYPE (TUMBLING, HOPPING, SESSION) and WINDOW_SIZE: a windowed key."""
        kind = self.get("window_type")
        if kind is None:
            return None
        kind = kind.upper()
        if kind not in ("TUMBLING", "HOPPING", "SESSION"):
            raise ctx.error("window-type", f"WINDOW_TYPE must be TUMBLING, HOPPING or SESSION, not {kind}",
                            self.written("window_type") or where)
        size = self.get("window_size")
        millis = cond.duration_ms(size) if size else None
        if size and millis is None:
            raise ctx.error("window-size", f"WINDOW_SIZE must be a duration like '10 SECONDS', not {size!r}",
                            self.written("window_size") or where)
        if kind != "SESSION" and millis is None:
            raise ctx.error("window-size", f"a {kind} windowed source needs WINDOW_SIZE (e.g. "
                            "WINDOW_SIZE='10 SECONDS')", self.written("window_type") or where)
        return SourceWindow(kind, millis)


def sink_formats(ctx: Context, props: Properties, query: exp.Select, statement: exp.Expr) -> tuple[str, str]:
    """A persistent query's (key, value) formats: those its statement names, else, where the
    flavour's sinks inherit them, those of the first source in its FROM (a NONE key becoming the
    default key format, as the query has a key to write)."""
    table = query.args["from_"].this if ctx.flavour.sink_formats_from_source and query.args.get("from_") else None
    first = ctx.catalog.get(relation_name(ctx, table)) if isinstance(table, exp.Table) else None
    if first is None:
        return props.format(ctx, "key", [], statement), props.format(ctx, "value", [], statement)
    key = first.key_format if first.key_format != "NONE" else None
    return (props.format(ctx, "key", [], statement, default=key),
            props.format(ctx, "value", [], statement, default=first.value_format))


def _text(value: exp.Expr) -> str:
    if isinstance(value, exp.Boolean):
        return "true" if value.this else "false"
    return value.name


def whole_partitions(ctx: Context, value, name: str, where: exp.Expr | None) -> int | None:
    """A partition count given as `value` (text or a number) by `name`, else None."""
    if value is None:
        return None
    if not re.fullmatch(r"\d+", str(value)) or int(value) < 1:
        raise ctx.error("property-value", f"{name} is a whole number of partitions, 1 or more (e.g. "
                        f"{name}=6), not {value!r}", where)
    return int(value)


def declared_source(ctx: Context, create: CreateRelation) -> SourceDef:
    name = relation_name(ctx, create.this)
    props = Properties.of(create)
    connector = read_connector_options(ctx, props, props.values, create.this)
    columns, keys, metadata, proctime, headers = _columns(ctx, create)
    columns, keys = registry_columns.with_inferred(ctx, name, props, create.this, columns, keys)
    if not columns:
        raise ctx.error("no-columns", f"{name} declares no columns: list them, e.g. CREATE STREAM {name} "
                        "(id STRING KEY, v INT) WITH (...)", create.this)
    for key in create.args.get("primary_key") or []:
        keys[_declared(ctx, columns, fold(ctx, key), key)] = key
    for header_column, _ in headers:
        if header_column in keys:
            raise ctx.error("header-column", f"{header_column} is read from the record headers, so it cannot also be "
                            "a key column: declare the key in a column of its own", keys[header_column])
    timestamp_format = props.get("timestamp_format")
    timestamp, delay = _event_time(ctx, create, columns, props, timestamp_format)
    kind = create.args["kind"].lower()
    if ctx.flavour.ddl_kind_from_key:  # no key = append-only stream; key + watermark = versioned table
        kind = "stream" if not keys else ("versioned_table" if timestamp else "table")
    if connector.lookup is not None:  # a database table: looked up as it is now, key or none
        kind = Kind.TABLE
    elif kind == Kind.TABLE and not keys and ctx.flavour.table_requires_primary_key:
        raise ctx.error("table-primary-key", f"table {name} has no PRIMARY KEY: mark its key column, e.g. "
                        "`id STRING PRIMARY KEY` (or declare a STREAM)", create.this)
    keys = kafka_keys.record_key(ctx, name, props, keys, lambda c, node: _declared(ctx, columns, c, node), create.this)
    key_columns = [(k, columns[k]) for k in keys]
    from_headers = {c for c, _ in headers}
    value_columns = [(c, t) for c, t in columns.items()
                     if c not in keys and not t.proctime and c not in metadata and c not in from_headers]
    value_format = props.format(ctx, "value", value_columns, create.this)
    key_format = _changelog_key(ctx, name, value_format, keys, create) if value_format in CHANGELOG_FORMATS else \
        props.format(ctx, "key", key_columns, list(keys.values())[-1] if keys else create.this)
    virtual, from_envelope = _metadata(ctx, value_format, metadata, columns)
    try:
        return SourceDef(name, kind, props.get("kafka_topic", "topic") or name, props.partitions(ctx),
                         tuple(keys), columns, key_format, value_format, timestamp, proctime, delay, virtual,
                         wrap_single_value=props.flag("wrap_single_value", True),
                         value_delimiter=props.get("value_delimiter") or ",",
                         timestamp_format=timestamp_format, window=props.window(ctx, create.this),
                         header_columns=tuple(headers), metadata_columns=from_envelope,
                         schemas=registry_columns.schema_refs(ctx, props),
                         wrap_single_key=kafka_keys.key_is_row(props), lookup=connector.lookup,
                         startup=connector.startup, bootstrap=connector.bootstrap,
                         client_properties=connector.properties)
    except ValueError as error:
        raise ctx.error("source-definition", str(error), create.this) from None


def _columns(ctx: Context, create: CreateRelation):
    """(name -> type, key name -> its node, METADATA column name -> its node, PROCTIME column,
    header columns as (name, header key or None for all)) of the column list."""
    columns: dict[str, SqlType] = {}
    keys: dict[str, exp.Expr] = {}
    metadata: dict[str, SourceColumn] = {}
    proctime, headers = None, []
    for column in create.args.get("columns") or []:
        cname = fold(ctx, column.this)
        if any(c.lower() == cname.lower() for c in columns):
            raise ctx.error("duplicate-column", f"column {cname!r} is declared twice: rename or remove one", column)
        computed = column.args.get("computed")
        if computed is not None:
            if not (isinstance(computed, exp.Anonymous) and computed.name.upper() == "PROCTIME"):
                raise ctx.error("computed-column", f"computed column {cname} is not supported (only `{cname} AS "
                                "PROCTIME()`): compute it in the query's SELECT", column)
            columns[cname], proctime = PROCTIME, cname
            continue
        try:
            columns[cname] = SqlType.parse(column.args["type_text"].name)
        except TypeSyntaxError as error:
            raise ctx.error("column-type", str(error), column) from None
        if column.args.get("header") is not None:
            headers.append((cname, _header_key(ctx, column, cname, columns[cname], headers)))
        if column.args.get("key"):
            keys[cname] = column
        if column.args.get("metadata") or column.args.get("virtual"):
            metadata[cname] = column
    return columns, keys, metadata, proctime, headers


def _header_key(ctx: Context, column: SourceColumn, cname: str, kind: SqlType, earlier: list) -> str | None:
    """The header key a `HEADER('k')` column reads (None: `HEADERS`, every header), checked: the
    flavour reads headers, the type holds what a header is, no header is read twice, no key."""
    header = column.args["header"]
    key = None if isinstance(header, exp.Star) else header.name
    written = "HEADERS" if key is None else f"HEADER('{key}')"
    if not ctx.flavour.header_columns:
        raise ctx.error("header-column", f"{cname}: the {ctx.flavour.name} flavour does not read record headers "
                        f"into columns ({written})", column)
    if column.args.get("key"):
        raise ctx.error("header-column", f"{cname} is read from the record headers, so it cannot also be a key "
                        "column: declare the key in a column of its own", column)
    problem = header_problem(cname, key, kind)
    if problem:
        raise ctx.error("header-column", problem, column)
    for other, other_key in earlier:
        if other_key == key:
            raise ctx.error("header-column", f"{cname} reads {written}, which {other} already reads: one column per "
                            "header", column)
    return key


def _metadata(ctx: Context, value_format: str, metadata: dict[str, SourceColumn], columns: dict):
    """(columns holding the record timestamp, (column, key) of those the value format's envelope
    fills): `METADATA [FROM 'key']`, the key being the column's name when FROM is left out."""
    record_ts, from_envelope = [], []
    for cname, column in metadata.items():
        source = column.args.get("metadata_from")
        key = source.name if source is not None else column.this.name
        problem = metadata_problem(value_format, key, columns[cname])
        if problem:
            raise ctx.error("metadata-column", f"{cname}: {problem}", column)
        if key == RECORD_TIMESTAMP:
            record_ts.append(cname)
        else:
            from_envelope.append((cname, key))
    return tuple(record_ts), tuple(from_envelope)


def _changelog_key(ctx: Context, name: str, value_format: str, keys: dict, create: CreateRelation) -> str:
    """A changelog's records are changes of keyed rows: the source needs its PRIMARY KEY, which
    is read from the envelope's row (the key format is the value format)."""
    if not keys:
        raise ctx.error("changelog-primary-key", f"{name} reads the changelog format {value_format.lower()}, whose "
                        "records change keyed rows: declare its key, e.g. PRIMARY KEY (id) NOT ENFORCED",
                        create.this)
    return value_format


def _declared(ctx: Context, columns: dict, name: str, node: exp.Expr) -> str:
    declared = next((c for c in columns if c.lower() == name.lower()), None)
    if declared is None:
        raise ctx.error("unknown-column", f"{name!r} is not a declared column: declare it in the column list "
                        "first", node)
    return declared


def _event_time(ctx: Context, create: CreateRelation, columns: dict, props: Properties, timestamp_format: str | None):
    """(event-time column, watermark delay ms) from Flink `WATERMARK FOR` or ksqlDB `timestamp='c'`
    (text in a Java pattern when TIMESTAMP_FORMAT is given)."""
    watermarks = create.args.get("watermarks") or []
    if len(watermarks) > 1:
        raise ctx.error("watermark", "a table has one WATERMARK: remove this one", watermarks[1])
    if not watermarks:
        if props.get("timestamp") is None:
            return None, None
        written = props.written("timestamp")
        column = _declared(ctx, columns, props.get("timestamp"), written)
        problem = event_time_problem(column, columns[column], timestamp_format)
        if problem:
            raise ctx.error("timestamp-column", problem, props.written("timestamp_format") or written)
        return column, None
    watermark = watermarks[0]
    column = _declared(ctx, columns, watermark.this.name, watermark.this)
    if not columns[column].is_timestamp:
        raise ctx.error("watermark", f"WATERMARK FOR {column} needs a TIMESTAMP(3) column, not "
                        f"{columns[column]}", watermark.this)
    strategy = watermark.expression.unnest()
    shape = (f"write WATERMARK FOR {column} AS {column} - INTERVAL '5' SECOND (or AS {column} for no delay)")
    if isinstance(strategy, exp.Column) and strategy.name.lower() == column.lower():
        return column, None
    if (isinstance(strategy, exp.Sub) and isinstance(strategy.left.unnest(), exp.Column)
            and strategy.left.unnest().name.lower() == column.lower()
            and isinstance(strategy.right.unnest(), exp.Interval)):
        delay = interval_millis(strategy.right.unnest())
        if delay < 0:
            raise ctx.error("watermark", f"a watermark delay cannot be negative: {shape}", strategy.right)
        return column, delay
    raise ctx.error("watermark", f"unsupported watermark strategy: {shape}", watermark.expression)
