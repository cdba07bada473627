"""Source declarations -> SourceDef: `CREATE STREAM|TABLE name (columns) WITH (...)` in the
ksqlDB, Flink and s-Server forms. Every mistake is a positioned error at the text that makes it:
a column type, a key, a watermark, a property, a format that cannot hold the columns."""

from __future__ import annotations

import re

from sqlglot import exp

from streamjoin.dialect.durations import interval_millis
from streamjoin.dialect.formats import event_time_problem, format_problem
from streamjoin.dialect.nodes import CreateRelation, SourceColumn
from streamjoin.dialect.types import SqlType, TypeSyntaxError
from streamjoin.plan.catalog import SourceDef
from streamjoin.plan.relations import table_name
from streamjoin.plan.scope import Context

PROCTIME = SqlType.parse("TIMESTAMP_LTZ(3) PROCTIME")


def properties(statement: exp.Expr) -> dict[str, exp.Property]:
    """`WITH (...)` of a CREATE statement: lower-cased name -> the property as written."""
    return {p.name: p for p in statement.args.get("properties") or []}


def text(prop: exp.Property | None) -> str | None:
    return prop.args["value"].name if prop is not None else None


def partition_count(ctx: Context, prop: exp.Property | None) -> int | None:
    """`PARTITIONS=n`: a whole number, 1 or more."""
    return whole_partitions(ctx, text(prop), "PARTITIONS", prop.args["value"] if prop is not None else None)


def whole_partitions(ctx: Context, value, name: str, where: exp.Expr | None) -> int | None:
    """A partition count given as `value` (text or a number) by `name`, else None."""
    if value is None:
        return None
    if not re.fullmatch(r"\d+", str(value)) or int(value) < 1:
        raise ctx.error("property-value", f"{name} is a whole number of partitions, 1 or more (e.g. "
                        f"{name}=6), not {value!r}", where)
    return int(value)


def check_format(ctx: Context, side: str, fmt: str, columns, prop: exp.Property | None, fallback) -> None:
    """A positioned `format` error when `fmt` cannot hold `columns` on the record's `side`: at the
    property that names the format, else at `fallback` (what brought the columns)."""
    problem = format_problem(side, fmt, columns)
    if problem:
        raise ctx.error("format", problem, prop.args["value"] if prop is not None else fallback)


def declared_source(ctx: Context, create: CreateRelation) -> SourceDef:
    name = table_name(create.this)
    props = properties(create)
    columns, keys, virtual, proctime = _columns(ctx, create)
    if not columns:
        raise ctx.error("no-columns", f"{name} declares no columns: list them, e.g. CREATE STREAM {name} "
                        "(id STRING KEY, v INT) WITH (...)", create.this)
    for key in create.args.get("primary_key") or []:
        keys[_declared(ctx, columns, key.name, key)] = key
    timestamp, delay = _event_time(ctx, create, columns, props.get("timestamp"))
    kind = create.args["kind"].lower()
    if ctx.flavour.ddl_kind_from_key:  # no key = append-only stream; key + watermark = versioned table
        kind = "stream" if not keys else ("versioned_table" if timestamp else "table")
    elif kind == "table" and not keys and ctx.flavour.table_requires_primary_key:
        raise ctx.error("table-primary-key", f"table {name} has no PRIMARY KEY: mark its key column, e.g. "
                        "`id STRING PRIMARY KEY` (or declare a STREAM)", create.this)
    key_prop = props.get("key_format") or props.get("key.format")
    value_prop = props.get("value_format") or props.get("value.format") or props.get("format")
    key_format, value_format = (text(key_prop) or "KAFKA").upper(), (text(value_prop) or "JSON").upper()
    key_columns = [(k, columns[k]) for k in keys]
    check_format(ctx, "key", key_format, key_columns, key_prop, list(keys.values())[-1] if keys else create.this)
    value_columns = [(c, t) for c, t in columns.items() if c not in keys and not t.proctime and c not in virtual]
    check_format(ctx, "value", value_format, value_columns, value_prop, create.this)
    topic = text(props.get("kafka_topic")) or text(props.get("topic")) or name
    try:
        return SourceDef(name, kind, topic, partition_count(ctx, props.get("partitions")), tuple(keys), columns,
                         key_format, value_format, timestamp, proctime, delay, tuple(virtual))
    except ValueError as error:
        raise ctx.error("source-definition", str(error), create.this) from None


def _columns(ctx: Context, create: CreateRelation):
    """(name -> type, key name -> its node, virtual column names, PROCTIME column) of the column list."""
    columns: dict[str, SqlType] = {}
    keys: dict[str, exp.Expr] = {}
    virtual, proctime = [], None
    for column in create.args.get("columns") or []:
        cname = column.this.name
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
        if column.args.get("key"):
            keys[cname] = column
        if column.args.get("metadata") or column.args.get("virtual"):
            _check_metadata(ctx, column, columns[cname])
            virtual.append(cname)
    return columns, keys, virtual, proctime


def _check_metadata(ctx: Context, column: SourceColumn, kind: SqlType) -> None:
    """Only the record timestamp is read from the record's metadata."""
    source = column.args.get("metadata_from")
    key = source.name if source is not None else column.this.name
    if key.lower() != "timestamp" and not key.lower().endswith(".timestamp"):
        raise ctx.error("metadata-column", f"METADATA {key!r} is not available: only the record timestamp is "
                        "(METADATA FROM 'timestamp')", column)
    if not kind.is_timestamp:
        raise ctx.error("metadata-column", f"the record timestamp is a TIMESTAMP, not {kind}: declare "
                        f"{column.this.name} TIMESTAMP(3) METADATA FROM 'timestamp'", column)


def _declared(ctx: Context, columns: dict, name: str, node: exp.Expr) -> str:
    declared = next((c for c in columns if c.lower() == name.lower()), None)
    if declared is None:
        raise ctx.error("unknown-column", f"{name!r} is not a declared column: declare it in the column list "
                        "first", node)
    return declared


def _event_time(ctx: Context, create: CreateRelation, columns: dict, prop: exp.Property | None):
    """(event-time column, watermark delay ms) from Flink `WATERMARK FOR` or ksqlDB `timestamp='c'`."""
    watermarks = create.args.get("watermarks") or []
    if len(watermarks) > 1:
        raise ctx.error("watermark", "a table has one WATERMARK: remove this one", watermarks[1])
    if not watermarks:
        if prop is None:
            return None, None
        column = _declared(ctx, columns, text(prop), prop.args["value"])
        problem = event_time_problem(column, columns[column])
        if problem:
            raise ctx.error("timestamp-column", problem, prop.args["value"])
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
