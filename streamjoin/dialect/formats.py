"""The record formats a statement can name (`KEY_FORMAT`, `VALUE_FORMAT`, Flink `'format'`) and
the columns each can hold. `streamjoin.serde` implements them; the planner checks every
declaration and sink against these rules, so a format that cannot work fails at plan time."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from streamjoin.dialect.types import SqlType

# Formats whose records are written with a schema kept in a Confluent-compatible schema registry
# (a magic byte and the schema id before the payload), and PROTOBUF_NOSR: protobuf without the
# registry, its message made from the columns. (streamjoin.serde.registry_codecs)
REGISTRY_FORMATS = ("AVRO", "PROTOBUF", "JSON_SR")
SCHEMA_FORMATS = REGISTRY_FORMATS + ("PROTOBUF_NOSR",)
KEY_FORMATS = ("KAFKA", "JSON", "DELIMITED", "NONE") + SCHEMA_FORMATS
# Flink's changelog formats written by CDC tools (streamjoin.serde.changelog): value formats whose
# records are row changes of a table; such a source's key is its row's primary key, read from the
# value's envelope (its key format is the value format).
CHANGELOG_FORMATS = ("DEBEZIUM-JSON", "CANAL-JSON", "MAXWELL-JSON")
VALUE_FORMATS = ("JSON", "DELIMITED", "KAFKA") + SCHEMA_FORMATS + CHANGELOG_FORMATS
# Flink's names of the same formats ('format' = 'avro-confluent')
FORMAT_ALIASES = {"AVRO-CONFLUENT": "AVRO"}


@dataclass(frozen=True)
class SchemaRefs:
    """A declaration's registered schemas: KEY_SCHEMA_ID / VALUE_SCHEMA_ID (the schema to read and
    write with, instead of the subject's latest) and KEY_SCHEMA_FULL_NAME / VALUE_SCHEMA_FULL_NAME
    (the message within a PROTOBUF schema that holds several)."""

    key_id: int | None = None
    value_id: int | None = None
    key_name: str | None = None
    value_name: str | None = None
    # Flink's 'avro-confluent.url' (and 'avro-confluent.basic-auth.user-info'): the registry of this
    # table's formats, instead of the engine's
    registry_url: str | None = None
    registry_auth: str | None = None
KAFKA_TYPES = ("INT", "BIGINT", "DOUBLE", "STRING", "BYTES")  # Kafka's standard serializers


class FormatError(ValueError):
    """Columns that a record's `side` ("key" or "value") cannot hold in its format."""

    def __init__(self, message: str, side: str) -> None:
        super().__init__(message)
        self.side = side


def format_problem(side: str, fmt: str, columns: Sequence[tuple[str, SqlType]]) -> str | None:
    """Why `columns` cannot be a record's `side` ("key" or "value") written in format `fmt`,
    or None when they can. Each reason says what to write instead."""
    known = KEY_FORMATS if side == "key" else VALUE_FORMATS
    names = [name for name, _ in columns]
    json = f"write {side.upper()}_FORMAT='JSON' (Flink: '{side}.format'='json')"
    if side == "key" and fmt in CHANGELOG_FORMATS:  # a changelog's own key never comes here (see above)
        return (f"{fmt.lower()} is a changelog value format: a source reads its key from the value's row, and results "
                "are not written in it (write 'json')")
    if fmt not in known:
        return f"unknown {side} format {fmt!r}: use one of {', '.join(known)}"
    if fmt == "NONE" and columns:
        return f"KEY_FORMAT 'NONE' cannot have key columns ({', '.join(names)}): use KEY_FORMAT='KAFKA' or 'JSON'"
    if fmt == "KAFKA" and len(columns) > 1:
        return f"the KAFKA format holds a single column; the {side} has {names}: {json}"
    if fmt == "KAFKA" and columns and columns[0][1].name not in KAFKA_TYPES:
        name, kind = columns[0]
        return f"the KAFKA format supports {', '.join(KAFKA_TYPES)}; {side} column {name} is {kind}: {json}"
    if fmt == "DELIMITED":
        for name, kind in columns:
            if kind.is_nested:
                return f"DELIMITED does not support ARRAY, MAP or STRUCT; {side} column {name} is {kind}: {json}"
    return None


def event_time_problem(column: str, kind: SqlType, timestamp_format: str | None = None) -> str | None:
    """Why `column` cannot hold a record's event time, or None: a TIMESTAMP, or epoch
    milliseconds in a BIGINT (or INT); with a TIMESTAMP_FORMAT, text (a STRING) in that pattern."""
    if timestamp_format is not None:
        if kind.name == "STRING":
            return None
        return (f"timestamp column {column!r} has a TIMESTAMP_FORMAT, so it must be a STRING, not {kind}: "
                "remove TIMESTAMP_FORMAT to read a TIMESTAMP or BIGINT column")
    if kind.is_timestamp or kind.name in ("BIGINT", "INT"):
        return None
    return f"timestamp column {column!r} must be TIMESTAMP or BIGINT (epoch milliseconds), not {kind}"


HEADERS_TYPE = SqlType.parse("ARRAY<STRUCT<KEY STRING, VALUE BYTES>>")


def header_problem(name: str, key: str | None, kind: SqlType) -> str | None:
    """Why column `name` of type `kind` cannot hold header `key` (None: every header), or None.
    One header is its BYTES; every header is ARRAY<STRUCT<KEY STRING, VALUE BYTES>> (field names
    in any case)."""
    if key is not None:
        return None if kind.name == "BYTES" else f"{name} HEADER('{key}') holds the header's bytes: declare it BYTES, not {kind}"
    struct = kind.elements[0] if kind.name == "ARRAY" else None
    fields = [(n.upper(), t.name) for n, t in struct.fields] if struct is not None and struct.name == "STRUCT" else []
    if fields != [("KEY", "STRING"), ("VALUE", "BYTES")]:
        return f"{name} HEADERS holds every header: declare it {HEADERS_TYPE}, not {kind}"
    return None


_TIME, _TEXT = "a TIMESTAMP(3) or TIMESTAMP_LTZ(3)", "a STRING"
# METADATA FROM '<key>' columns each changelog format fills from its envelope, with what they hold
FORMAT_METADATA: dict[str, dict[str, str]] = {
    "DEBEZIUM-JSON": {"value.source.timestamp": _TIME, "value.ingestion-timestamp": _TIME,
                      "value.source.database": _TEXT, "value.source.schema": _TEXT, "value.source.table": _TEXT},
    "CANAL-JSON": {"value.event-timestamp": _TIME, "value.ingestion-timestamp": _TIME,
                   "value.database": _TEXT, "value.table": _TEXT},
    "MAXWELL-JSON": {"value.ingestion-timestamp": _TIME, "value.database": _TEXT, "value.table": _TEXT},
}
RECORD_TIMESTAMP = "timestamp"  # METADATA FROM 'timestamp': the Kafka record's timestamp
_INT, _BIGINT, _HEADER_MAP = "an INT", "a BIGINT", "a MAP<STRING, BYTES>"
# METADATA FROM '<key>' columns of every Kafka record besides its timestamp: where it was read
# (READ_METADATA, known to the task that reads it, not in its bytes) and its headers (the last
# value of each key)
KAFKA_METADATA = {"topic": _TEXT, "partition": _INT, "offset": _BIGINT, "headers": _HEADER_MAP}
READ_METADATA = ("topic", "partition", "offset")
_FITS = {_TIME: lambda kind: kind.is_timestamp, _TEXT: lambda kind: kind.name == "STRING",
         _INT: lambda kind: kind.name == "INT", _BIGINT: lambda kind: kind.name == "BIGINT",
         _HEADER_MAP: lambda kind: kind.name == "MAP" and [t.name for t in kind.elements] == ["STRING", "BYTES"]}


def metadata_problem(value_format: str, key: str, kind: SqlType) -> str | None:
    """Why a `METADATA FROM key` column of type `kind` cannot be read from a record whose value
    is in `value_format`, or None."""
    available = {RECORD_TIMESTAMP: _TIME, **KAFKA_METADATA, **FORMAT_METADATA.get(value_format, {})}
    holds = available.get(key)
    if holds is None:
        return (f"METADATA {key!r} is not available with value format {value_format}: use one of "
                f"{', '.join(repr(k) for k in available)}")
    if not _FITS[holds](kind):
        return f"METADATA {key!r} is {holds}, not {kind}"
    return None
