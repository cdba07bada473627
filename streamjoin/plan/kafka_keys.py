"""Flink's Kafka connector options that say which columns the record key holds:

- `'key.fields' = 'a;b'`: those columns are read from the record key, in `'key.format'` (Flink
  writes a key as a row, so a JSON key is an object even for one column). The relation's kind
  still comes from its PRIMARY KEY: key fields without one are an append-only stream's.
- `'connector' = 'upsert-kafka'`: a table keyed by its PRIMARY KEY, read from the record key with
  `'key.format'` and the rest from the value with `'value.format'` (both required); a null value
  deletes its key.
- `'value.fields-include'`: `ALL` (the value repeats the key columns) or `EXCEPT_KEY` (it does
  not). Both read alike: a key column is read from the key, never from a value field.
"""

from __future__ import annotations

from typing import Callable, Protocol

from sqlglot import exp

from streamjoin.plan.scope import Context


class Properties(Protocol):
    """What is read of a declaration's WITH (...) (`streamjoin.plan.ddl.Properties`)."""

    def get(self, *names: str) -> str | None: ...

    def written(self, *names: str) -> exp.Expr | None: ...

FIELDS_INCLUDE = ("ALL", "EXCEPT_KEY")
UPSERT_KAFKA = "upsert-kafka"


def record_key(ctx: Context, name: str, props: Properties, primary: dict[str, exp.Expr],
               declared: Callable[[str, exp.Expr], str], where: exp.Expr) -> dict[str, exp.Expr]:
    """The columns the record key holds (column -> the text that made it one): the primary key
    (or ksqlDB's KEY columns) unless `'key.fields'` names them. `declared(name, node)` is the
    declared spelling of a column, else a positioned error."""
    include = props.get("value.fields-include")
    if include is not None and include.upper() not in FIELDS_INCLUDE:
        raise ctx.error("property-value", f"'value.fields-include' is ALL or EXCEPT_KEY, not {include!r}",
                        props.written("value.fields-include"))
    fields = props.get("key.fields")
    if (props.get("connector") or "").lower() == UPSERT_KAFKA:
        _check_upsert_kafka(ctx, name, props, primary, where)
        return primary
    if fields is None:
        return primary
    node = props.written("key.fields")
    keys = {declared(field.strip(), node): node for field in fields.split(";") if field.strip()}
    if primary and set(keys) != set(primary):
        raise ctx.error("key-fields", f"'key.fields' names {', '.join(keys)} but the PRIMARY KEY is "
                        f"{', '.join(primary)}: the record key holds the primary key, name the same columns", node)
    return keys


def _check_upsert_kafka(ctx: Context, name: str, props: Properties, primary: dict, where: exp.Expr) -> None:
    if not primary:
        raise ctx.error("upsert-kafka-primary-key", f"{name} is an upsert-kafka table, keyed by its primary key: "
                        "declare it, e.g. PRIMARY KEY (id) NOT ENFORCED", where)
    missing = [option for option in ("key.format", "value.format") if props.get(option) is None]
    if missing:
        raise ctx.error("upsert-kafka-format", f"an upsert-kafka table names both its formats: add "
                        f"{' and '.join(repr(m) + ' = ...' for m in missing)} (e.g. 'json')", where)
    if props.get("key.fields") is not None:
        raise ctx.error("key-fields", "an upsert-kafka table's key is its PRIMARY KEY: remove 'key.fields'",
                        props.written("key.fields"))


def key_is_row(props: Properties) -> bool:
    """Flink's `'key.format'` writes the key as a row: a JSON key is an object of its columns."""
    fmt = props.get("key.format")
    return fmt is not None and fmt.upper() == "JSON"
