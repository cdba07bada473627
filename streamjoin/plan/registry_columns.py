"""A ksqlDB declaration's registered schemas: KEY_SCHEMA_ID / VALUE_SCHEMA_ID and the
*_SCHEMA_FULL_NAME properties (`SchemaRefs`), and the columns inferred from the registry for a
side (key or value) in a registry format whose columns the declaration does not list."""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from streamjoin.dialect.formats import FORMAT_ALIASES, REGISTRY_FORMATS, SCHEMA_FORMATS, SchemaRefs
from streamjoin.dialect.types import SqlType
from streamjoin.plan import inference
from streamjoin.plan.scope import Context

INFERRED_KEY = "ROWKEY"  # the column a key schema of one primitive gives (ksqlDB's name)


def schema_refs(ctx: Context, props: Any) -> SchemaRefs:
    ids = {}
    for side in ("key", "value"):
        raw = props.get(f"{side}_schema_id")
        if raw is not None and not re.fullmatch(r"\d+", str(raw)):
            raise ctx.error("property-value", f"{side.upper()}_SCHEMA_ID is a schema id (a whole number), not {raw!r}",
                            props.written(f"{side}_schema_id"))
        ids[side] = None if raw is None else int(raw)
    url = props.get("avro-confluent.url", "value.avro-confluent.url", "key.avro-confluent.url")
    auth = props.get("avro-confluent.basic-auth.user-info", "value.avro-confluent.basic-auth.user-info",
                     "key.avro-confluent.basic-auth.user-info")
    return SchemaRefs(ids["key"], ids["value"], props.get("key_schema_full_name"), props.get("value_schema_full_name"),
                      url, auth)


def default_format(ctx: Context, side: str) -> str:
    """`side`'s format where a statement names none: ksqlDB's `ksql.persistence.default.format.key`
    / `.value` (a SET or a case property), else KAFKA for a key and JSON for a value."""
    name = f"ksql.persistence.default.format.{side}"
    given = ctx.settings.get(name) or (ctx.settings.get("properties") or {}).get(name)
    return str(given).upper() if given else ("KAFKA" if side == "key" else "JSON")


def flavour_problem(ctx: Context, side: str, fmt: str) -> str | None:
    """Why `fmt` is no format name in this flavour (ksqlDB's registry format names elsewhere)."""
    if fmt in SCHEMA_FORMATS and not ctx.flavour.registry_format_names:
        return (f"unknown {side} format {fmt!r}: in this flavour a schema registry's Avro is 'avro-confluent' "
                "(a format without a registry is not supported)")
    return None


def side_format(ctx: Context, props: Any, side: str) -> str:
    fmt = (props.get(*props.format_names(ctx.flavour, side)) or default_format(ctx, side)).upper()
    return FORMAT_ALIASES.get(fmt, fmt)


def with_inferred(ctx: Context, name: str, props: Any, where: exp.Expr, columns: dict[str, SqlType],
                  keys: dict[str, exp.Expr]) -> tuple[dict[str, SqlType], dict[str, exp.Expr]]:
    """`columns` and `keys` with those the registry gives a side in a registry format that the
    declaration lists no column of: key columns first, then the declared ones, then value columns."""
    refs = schema_refs(ctx, props)
    topic = props.get("kafka_topic", "topic") or name
    inferred_keys: dict[str, SqlType] = {}
    key_format, value_format = side_format(ctx, props, "key"), side_format(ctx, props, "value")
    if key_format in REGISTRY_FORMATS and not keys:
        found = _read(ctx, topic, "key", key_format, refs.key_id, refs.key_name, where)
        if found and len(found) == 1 and refs.key_name is None:
            found = [(INFERRED_KEY if key_format != "PROTOBUF" else found[0][0], found[0][1])]
        inferred_keys = dict(found or [])
    if value_format in REGISTRY_FORMATS and all(c in keys for c in columns):
        found = _read(ctx, topic, "value", value_format, refs.value_id, refs.value_name, where)
        columns = {**columns, **{c: t for c, t in found or [] if c not in columns and c not in inferred_keys}}
    return {**inferred_keys, **columns}, {**{k: where for k in inferred_keys}, **keys}


def _read(ctx: Context, topic: str, side: str, fmt: str, schema_id: int | None, full_name: str | None,
          where: exp.Expr) -> list[tuple[str, SqlType]] | None:
    try:
        return inference.inferred(topic, side, fmt, schema_id, full_name)
    except Exception as error:  # noqa: BLE001 - a registry's or a schema's failure, reported at the declaration
        subject = f"schema id {schema_id}" if schema_id is not None else f"subject {topic}-{side}"
        raise ctx.error("schema-inference", f"cannot read the {side} columns from the schema registry "
                        f"({subject}): {str(error).splitlines()[0][:200]}", where) from None


def check_joined_formats(ctx: Context, select: exp.Select) -> None:
    """Where the flavour does not join KAFKA values (ksqlDB): a join reading a source whose value
    is in the KAFKA format is refused, naming every such source."""
    if ctx.flavour.joins_kafka_values or not select.args.get("joins"):
        return
    tables = [select.args["from_"].this] if select.args.get("from_") else []
    tables += [join.this for join in select.args["joins"]]
    names = []
    for table in tables:
        if isinstance(table, exp.Table):
            source = ctx.catalog.get(".".join(p.name for p in (table.args.get("db"), table.args.get("this")) if p))
            if source is not None and source.value_format == "KAFKA" and source.name not in names:
                names.append(source.name)
    if names:
        raise ctx.error("format", f"{', '.join(names)} {'use' if len(names) > 1 else 'uses'} the KAFKA value format, "
                        "which a join does not read in this flavour: declare VALUE_FORMAT='JSON' (or another "
                        "format)", select.args["joins"][0])
