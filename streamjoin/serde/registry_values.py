"""Values between SQL columns and the records the registry serializers take and give: decoded
records (dicts, bare values, protobuf messages) read into columns, and columns shaped into a
schema's records, fields matched by name ignoring case (serde.registry_codecs)."""

from __future__ import annotations

import base64
from datetime import datetime
from decimal import Decimal
from typing import Any, Callable, Sequence

from streamjoin.dialect.types import SqlType
from streamjoin.serde.registry_schemas import non_null
from streamjoin.serde.time import datetime_to_millis
from streamjoin.serde.values import json_reader, struct_reader

Columns = Sequence[tuple[str, SqlType]]


# ---- records -> columns ----------------------------------------------------------------------------

def payload_reader(columns: Columns, side: str, blank_decimals: bool = False) -> Callable[[Any], dict]:
    """A decoded record (a dict of fields, or one bare value) -> {column: value}. `blank_decimals`:
    a DECIMAL's "" is NULL, at any depth (PROTOBUF: `_blanker`)."""
    read_struct = struct_reader(tuple(columns), path=side)
    only = columns[0] if len(columns) == 1 else None
    read_only = json_reader(only[1]) if only else None
    blank_record = (_fields_blanker(columns) if blank_decimals else None) or _as_it_is
    blank_only = (_blanker(only[1]) if blank_decimals and only else None) or _as_it_is

    def read(payload: Any) -> dict:
        payload = plain(payload)
        if only is not None:
            if not isinstance(payload, dict) or (only[1].name == "STRUCT" and not _has(payload, only[0])):
                return {only[0]: read_only(blank_only(payload), f"{side}.{only[0]}")}
            if not _has(payload, only[0]) and len(payload) == 1:  # a one-field record of another name
                return {only[0]: read_only(blank_only(next(iter(payload.values()))), f"{side}.{only[0]}")}
        return read_struct(blank_record(payload), side)
    return read


def _as_it_is(value: Any) -> Any:
    return value


def _has(payload: dict, name: str) -> bool:
    return any(str(k).lower() == name.lower() for k in payload)


def plain(value: Any) -> Any:
    """Decoded values as the JSON readers take them: times as epoch milliseconds."""
    if isinstance(value, datetime):
        return datetime_to_millis(value)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def message_reader(columns: Columns, side: str) -> Callable[[Any], dict]:
    read = payload_reader(columns, side, blank_decimals=True)
    return lambda message: read(_message_dict(message))


def _fields_blanker(columns: Columns) -> Callable[[Any], Any] | None:
    """What blanks the DECIMALs of a message's fields (`columns`, matched without case); None
    when none of them holds a DECIMAL. A value of another shape than its type is left as it is,
    for the reader to refuse."""
    blankers = {name.lower(): blank for name, t in columns if (blank := _blanker(t)) is not None}
    if not blankers:
        return None

    def blank(fields: Any) -> Any:
        if isinstance(fields, dict):
            for name, value in fields.items():
                if (field := blankers.get(str(name).lower())) is not None:
                    fields[name] = field(value)
        return fields
    return blank


def _blanker(t: SqlType) -> Callable[[Any], Any] | None:
    """What gives a value of `t` with its DECIMALs' "" as NULL (a DECIMAL is a string field, and
    proto3 writes a NULL one as the empty string, which is no number); None when `t` holds no
    DECIMAL."""
    if t.name == "DECIMAL":
        return lambda value: None if value == "" else value
    if t.name == "STRUCT":
        return _fields_blanker(t.fields)
    inner = _blanker(t.elements[-1]) if t.name in ("ARRAY", "MAP") else None  # the element; a MAP's value
    if inner is None:
        return None
    if t.name == "ARRAY":
        return lambda values: [inner(v) for v in values] if isinstance(values, list) else values
    return lambda entries: {k: inner(v) for k, v in entries.items()} if isinstance(entries, dict) else entries


def _message_dict(message) -> dict:
    out = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        inner = field.message_type
        if inner is not None and inner.GetOptions().map_entry:
            is_message = inner.fields_by_name["value"].message_type is not None
            out[field.name] = {k: _message_dict(v) if is_message else v for k, v in value.items()}
        elif field.is_repeated:
            out[field.name] = [_message_dict(v) if inner is not None else v for v in value]
        elif inner is not None:
            out[field.name] = _message_dict(value) if message.HasField(field.name) else None
        else:
            out[field.name] = value
    return out


# ---- columns -> records ------------------------------------------------------------------------------

def message_of(cls, columns: Columns, values: Sequence[Any]):
    message = cls()
    _fill(message, dict(zip((n for n, _ in columns), values)))
    return message


def _fill(message, row: dict) -> None:
    fields = {f.name.lower(): f for f in message.DESCRIPTOR.fields}
    for name, value in row.items():
        field = fields.get(str(name).lower())
        if field is None and len(row) == 1 and len(fields) == 1:
            field = next(iter(fields.values()))
        if field is None or value is None:
            continue
        inner, target = field.message_type, getattr(message, field.name)
        if inner is not None and inner.GetOptions().map_entry:
            value_field = inner.fields_by_name["value"]
            for k, v in value.items():
                if v is None:
                    continue
                if value_field.message_type is not None:
                    _fill(target[k], v)
                else:
                    target[proto_scalar(inner.fields_by_name["key"], k)] = proto_scalar(value_field, v)
        elif field.is_repeated:  # (a NULL element: the element's default, as proto3 has no null)
            for v in value:
                if inner is not None:
                    _fill(target.add(), v or {})
                else:
                    target.append(proto_scalar(field, v) if v is not None else _zero(field))
        elif inner is not None:  # present even when every field of it is NULL (proto3's default)
            target.SetInParent()
            _fill(target, value)
        else:
            setattr(message, field.name, proto_scalar(field, value))


def _zero(field) -> Any:
    """A scalar field's proto3 default (a repeated field's `default_value` is its empty list)."""
    if field.cpp_type == field.CPPTYPE_STRING:
        return b"" if field.type == field.TYPE_BYTES else ""
    return False if field.cpp_type == field.CPPTYPE_BOOL else 0


def proto_scalar(field, value: Any) -> Any:
    kind = field.cpp_type
    if kind == field.CPPTYPE_STRING:
        if field.type == field.TYPE_BYTES:
            return value if isinstance(value, (bytes, bytearray)) else _b64(value)
        return value if isinstance(value, str) else str(value)
    if kind in (field.CPPTYPE_INT32, field.CPPTYPE_INT64, field.CPPTYPE_UINT32, field.CPPTYPE_UINT64):
        return datetime_to_millis(value) if isinstance(value, datetime) else int(value)
    if kind in (field.CPPTYPE_FLOAT, field.CPPTYPE_DOUBLE):
        return float(value)
    if kind == field.CPPTYPE_BOOL:
        return bool(value)
    if kind == field.CPPTYPE_ENUM:
        return field.enum_type.values_by_name[value].number if isinstance(value, str) else int(value)
    return value


def _b64(value: Any) -> bytes:
    return base64.b64decode(value)


def avro_shaper(schema: Any, columns: Columns) -> Callable[[Sequence[Any]], Any]:
    names = [n for n, _ in columns]
    inner = non_null(schema)
    if isinstance(inner, dict) and inner.get("type") == "record" and not (
            len(columns) == 1 and columns[0][1].name == "STRUCT" and not _named(inner, names[0])):
        return lambda values: avro_value(dict(zip(names, values)), inner)
    return lambda values: avro_value(values[0], schema)


def _named(record: dict, name: str) -> bool:
    return any(f["name"].lower() == name.lower() for f in record["fields"])


def avro_value(value: Any, schema: Any) -> Any:
    if value is None:
        return None
    schema = non_null(schema)
    kind = schema.get("type") if isinstance(schema, dict) else schema
    if kind == "record":
        lowered = {str(k).lower(): v for k, v in value.items()}
        return {f["name"]: avro_value(lowered.get(f["name"].lower()), f["type"]) for f in schema["fields"]}
    if kind == "array":
        return [avro_value(v, schema["items"]) for v in value]
    if kind == "map":
        return {str(k): avro_value(v, schema["values"]) for k, v in value.items()}
    if isinstance(schema, dict) and schema.get("logicalType") == "decimal":
        return value if isinstance(value, Decimal) else Decimal(str(value))
    if kind in ("bytes", "fixed") and isinstance(value, str):
        return _b64(value)
    if kind in ("int", "long") and not isinstance(value, (int, datetime)):
        return int(value)
    if kind in ("double", "float") and not isinstance(value, float):
        return float(value)
    if kind == "string" and not isinstance(value, str):
        return str(value)
    return value


def json_shaper(schema: Any, columns: Columns) -> Callable[[Sequence[Any]], Any]:
    names = [n for n, _ in columns]
    inner = non_null(schema)
    if isinstance(inner, dict) and "properties" in inner and not (
            len(columns) == 1 and columns[0][1].name == "STRUCT" and not _has(inner["properties"], names[0])):
        return lambda values: json_value(dict(zip(names, values)), inner)
    return lambda values: json_value(values[0], schema)


def json_value(value: Any, schema: Any) -> Any:
    if value is None:
        return None
    schema = non_null(schema) if isinstance(schema, dict) else {}
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        names = {p.lower(): p for p in properties}
        return {names.get(str(k).lower(), k): json_value(v, properties.get(names.get(str(k).lower(), ""), {}))
                for k, v in value.items()}
    if isinstance(value, list):
        return [json_value(v, schema.get("items") or {}) for v in value]
    if isinstance(value, Decimal):
        return int(value) if schema.get("type") == "integer" else float(value)
    if isinstance(value, datetime):
        return datetime_to_millis(value)
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value
