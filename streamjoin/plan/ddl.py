"""Source declarations (`CREATE STREAM|TABLE name (columns) WITH (...)` in the ksqlDB, Flink or
s-Server form) and the WITH properties of a declaration or of a persistent query's sink.

Names: an unquoted identifier is folded to upper case where the flavour does so
(`upper_case_identifiers`); a back-quoted or double-quoted one keeps its case.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from streamjoin.dialect.nodes import CreateRelation
from streamjoin.dialect.types import SqlType
from streamjoin.plan import conditions as cond
from streamjoin.plan.catalog import SourceDef, SourceWindow
from streamjoin.plan.scope import Context


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
    """The WITH (...) of a declaration or a sink, by lower-cased name, values as text."""

    values: dict[str, str]

    @classmethod
    def of(cls, node: exp.Expr | None) -> "Properties":
        return cls({p.name: _text(p.args["value"]) for p in (node.args.get("properties") or [])} if node else {})

    def get(self, *names: str) -> str | None:
        return next((self.values[n] for n in names if self.values.get(n) is not None), None)

    def flag(self, name: str, default: bool) -> bool:
        value = self.values.get(name)
        return default if value is None else value.lower() in ("true", "1", "yes")

    def formats(self, ctx: Context, key_default: str, value_default: str) -> tuple[str, str]:
        """(key format, value format). ksqlDB's FORMAT names both at once; Flink's `format` is
        the value format only."""
        both = self.get("format")
        key = self.get("key_format", "key.format") or (both if ctx.flavour.format_property_covers_key else None)
        value = self.get("value_format", "value.format") or both
        return (key or key_default).upper(), (value or value_default).upper()

    def window(self, ctx: Context, where: exp.Expr) -> SourceWindow | None:
        """ksqlDB WINDOW_TYPE (TUMBLING, HOPPING, SESSION) and WINDOW_SIZE: a windowed key."""
        kind = self.get("window_type")
        if kind is None:
            return None
        kind = kind.upper()
        if kind not in ("TUMBLING", "HOPPING", "SESSION"):
            raise ctx.error("window-type", f"WINDOW_TYPE must be TUMBLING, HOPPING or SESSION, not {kind}", where)
        size = self.get("window_size")
        millis = cond.duration_ms(size) if size else None
        if size and millis is None:
            raise ctx.error("window-size", f"WINDOW_SIZE must be a duration like '10 SECONDS', not {size!r}", where)
        if kind != "SESSION" and millis is None:
            raise ctx.error("window-size", f"a {kind} windowed source needs WINDOW_SIZE", where)
        return SourceWindow(kind, millis)


def _text(value: exp.Expr) -> str:
    if isinstance(value, exp.Boolean):
        return "true" if value.this else "false"
    return value.name


def declared_source(ctx: Context, create: CreateRelation) -> SourceDef:
    """CREATE STREAM|TABLE name (columns ...) WITH (...) as a catalog source."""
    name = relation_name(ctx, create.this)
    props = Properties.of(create)
    columns, keys, virtual, proctime = {}, [], [], None
    for column in create.args.get("columns") or []:
        cname = fold(ctx, column.this)
        if column.args.get("header") is not None:
            raise ctx.error("header-column", f"{cname}: columns read from record headers (HEADERS, HEADER('k')) are "
                            "not supported yet", column)
        if column.args.get("computed") is not None:
            if "PROCTIME" in column.args["computed"].sql().upper():
                columns[cname], proctime = SqlType.parse("TIMESTAMP_LTZ(3) PROCTIME"), cname
            continue
        columns[cname] = SqlType.parse(column.args["type_text"].name)
        if column.args.get("key"):
            keys.append(cname)
        if column.args.get("metadata") or column.args.get("virtual"):
            virtual.append(cname)
    keys += [fold(ctx, k) for k in create.args.get("primary_key") or []]
    watermarks = create.args.get("watermarks") or []
    timestamp = watermarks[0].this.name if watermarks else props.get("timestamp")
    if timestamp and not watermarks:
        timestamp = next((c for c in columns if c.lower() == timestamp.lower()), timestamp)
    delay = None
    if watermarks and isinstance(watermarks[0].expression, exp.Sub):
        delay = cond.interval_ms(watermarks[0].expression.right.unnest())
    kind = create.args["kind"].lower()
    if ctx.flavour.ddl_kind_from_key:  # no key = append-only stream; key + watermark = versioned table
        kind = "stream" if not keys else ("versioned_table" if timestamp else "table")
    key_format, value_format = props.formats(ctx, "KAFKA", "JSON")
    partitions = props.get("partitions")
    try:
        return SourceDef(name, kind, props.get("kafka_topic", "topic") or name,
                         int(partitions) if partitions else None, tuple(keys), columns,
                         key_format, value_format, timestamp, proctime, delay, tuple(virtual),
                         wrap_single_value=props.flag("wrap_single_value", True),
                         value_delimiter=props.get("value_delimiter") or ",",
                         timestamp_format=props.get("timestamp_format"),
                         window=props.window(ctx, create.this))
    except ValueError as error:
        raise ctx.error("source-definition", str(error), create.this) from None
