"""The registry formats (AVRO, PROTOBUF, JSON_SR) through confluent-kafka's schema-registry
client and its serializers, and PROTOBUF_NOSR with the protobuf runtime alone.

A writer writes with the latest schema of its subject (`<topic>-key` / `<topic>-value`, or the
schema a KEY_SCHEMA_ID / VALUE_SCHEMA_ID names), registering the schema of its columns first
when the subject is empty; fields match columns by name, ignoring case. A reader decodes with the
writer's schema (the id in the record), and reads fields into columns the same way. Clients,
schemas and serializers are made once per process and registry (an executor keeps them for every
task it runs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Callable, Sequence

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError

from streamjoin.dialect.types import SqlType
from streamjoin.plan import inference
from streamjoin.plan.registry_columns import INFERRED_KEY
from streamjoin.serde.protoschema import columns_proto, file_message_class
from streamjoin.serde.registry_schemas import SCHEMA_TYPES, inferred_columns, proto_file, schema_for
from streamjoin.serde.time import datetime_to_millis
from streamjoin.serde.values import DecodeError, EncodeError, json_reader, struct_reader

Columns = Sequence[tuple[str, SqlType]]


@dataclass(frozen=True)
class Registry:
    """Where a schema registry is: its URL and HTTP basic auth ("user:password" or None)."""

    url: str
    auth: str | None = None


_configured: list[Registry | None] = [None]


def configure(registry: Registry | None) -> None:
    """The registry SerdeSpecs made from now on in this process use (an entry point sets it from
    its Settings; the spec carries it to the tasks)."""
    _configured[0] = registry


def configured() -> Registry | None:
    return _configured[0]


def new_client(registry: Registry) -> SchemaRegistryClient:
    conf = {"url": registry.url}
    if registry.auth:
        conf["basic.auth.user.info"] = registry.auth
    return SchemaRegistryClient(conf)


def subject(topic: str, side: str) -> str:
    return f"{topic}-{side}"


def writer_schema(registry: Registry, subject_name: str, fmt: str, columns: Columns, bare: bool,
                  schema_id: int | None = None, register: bool = False) -> tuple[int, Schema]:
    """(id, schema) a writer writes with: `schema_id`'s, else the subject's latest; the columns'
    own schema registered first when the subject is empty or `register` (a sink's)."""
    sr = new_client(registry)  # a subject's latest, asked once per codec: never from a cache
    if schema_id is not None:
        return schema_id, sr.get_schema(schema_id)
    if not register:
        try:
            latest = sr.get_latest_version(subject_name)
            return latest.schema_id, latest.schema
        except SchemaRegistryError as error:
            if error.http_status_code != 404:
                raise
    schema = Schema(schema_for(fmt, columns, bare), SCHEMA_TYPES[fmt])
    # (The serializer's client is another one: this one keeps the schema's text as the answer to
    # a later `format=serialized` request for the same id, PROTOBUF's.)
    return sr.register_schema(subject_name, schema), schema


def schema_reader(registry: Registry | None, prefix: str = "") -> inference.Reader:
    """The planner's reader of inferred columns (`plan.inference`) from `registry`'s subjects
    `<prefix><topic>-<side>`."""
    def read(topic: str, side: str, fmt: str, schema_id: int | None, full_name: str | None):
        if registry is None:
            raise LookupError("no schema registry is configured: set STREAMJOIN_SCHEMA_REGISTRY_URL, or start the "
                              "project's own with `streamjoin registry start`")
        sr = new_client(registry)  # not cached: a subject's latest schema changes between plans
        if schema_id is not None:
            schema = sr.get_schema(schema_id)
        else:
            try:
                schema = sr.get_latest_version(subject(prefix + topic, side)).schema
            except SchemaRegistryError as error:
                if error.http_status_code == 404:
                    return None
                raise
        return inferred_columns(SCHEMA_TYPES[fmt], schema.schema_str, full_name, INFERRED_KEY)
    return read


inference.provide(lambda *args: schema_reader(configured())(*args))


def _ctx(topic: str, side: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.KEY if side == "key" else MessageField.VALUE)


def registry_codec(fmt: str, columns: Columns, side: str, bare: bool, topic: str | None,
                   registry: Registry | None, schema_id: int | None = None, full_name: str | None = None,
                   register: bool = False) -> tuple[Callable[[bytes], dict | None], Callable[[Sequence[Any]], bytes]]:
    """(bytes -> {column: value}, [values in column order] -> bytes) for one side in a registry
    format. Built lazily: the registry is asked on the first record, in the task."""
    if fmt == "PROTOBUF_NOSR":
        cls = file_message_class(proto_file(columns_proto(PROTO_NOSR, columns)).SerializeToString())
        read_message = _message_reader(columns, side)
        return (lambda data: read_message(_parsed(cls, data, side))), (lambda values: _message(cls, columns, values)
                                                                      .SerializeToString())
    if registry is None:
        raise EncodeError("no schema registry is configured: set STREAMJOIN_SCHEMA_REGISTRY_URL, or start the "
                          "project's own with `streamjoin registry start`")
    state: dict[str, Any] = {}
    read_fields = _message_reader(columns, side) if fmt == "PROTOBUF" else _payload_reader(columns, side)

    def read(data: bytes) -> dict | None:
        decode = state.get("decode") or state.setdefault("decode", _decoder(fmt, registry, topic, side, full_name))
        try:
            payload = decode(data, _ctx(topic or "", side))
        except (SerializationError, SchemaRegistryError, ValueError, TypeError, KeyError, IndexError) as error:
            raise DecodeError(f"{side}: not {fmt} of the registry's schema ({type(error).__name__}: {error})") from None
        return None if payload is None else read_fields(payload)

    def write(values: Sequence[Any]) -> bytes:
        encode = state.get("encode") or state.setdefault("encode", _encoder(
            fmt, registry, topic, side, columns, bare, schema_id, full_name, register))
        try:
            return encode(values)
        except (SerializationError, SchemaRegistryError) as error:
            raise EncodeError(f"does not fit the {fmt} schema of {subject(topic or '', side)}: {error}") from None
    return read, write


PROTO_NOSR = "ConnectDefault1"


def _parsed(cls, data: bytes, side: str):
    try:
        return cls.FromString(data)
    except Exception as error:  # noqa: BLE001 - protobuf's DecodeError and its C variant share no base
        raise DecodeError(f"{side}: not a PROTOBUF_NOSR message ({error})") from None


def _decoder(fmt: str, registry: Registry, topic: str | None, side: str, full_name: str | None):
    # A client per codec (per task and topic): ids a registry gives out again (a test's fixed ids)
    # are never read from another codec's cache.
    sr = new_client(registry)
    if fmt == "AVRO":
        return AvroDeserializer(sr)
    if fmt == "JSON_SR":
        return JSONDeserializer(None, schema_registry_client=sr)
    _, schema = writer_schema(registry, subject(topic or "", side), fmt, (), False)
    cls = file_message_class(proto_file(schema.schema_str).SerializeToString(), full_name)
    return ProtobufDeserializer(cls, {"use.deprecated.format": False}, sr)


def _encoder(fmt: str, registry: Registry, topic: str | None, side: str, columns: Columns, bare: bool,
             schema_id: int | None, full_name: str | None, register: bool) -> Callable[[Sequence[Any]], bytes]:
    sr, ctx = new_client(registry), _ctx(topic or "", side)
    sid, schema = writer_schema(registry, subject(topic or "", side), fmt, columns, bare, schema_id, register)
    conf = {"auto.register.schemas": False, "use.schema.id": sid}
    if fmt == "PROTOBUF":
        cls = file_message_class(proto_file(schema.schema_str).SerializeToString(), full_name)
        serializer = ProtobufSerializer(cls, sr, {**conf, "use.deprecated.format": False})
        return lambda values: serializer(_message(cls, columns, values), ctx)
    parsed = json.loads(schema.schema_str)
    if fmt == "AVRO":
        serializer = AvroSerializer(sr, schema.schema_str, conf=conf)
        shape = _avro_shaper(parsed, columns)
    else:
        serializer = JSONSerializer(schema.schema_str, sr, conf=conf)
        shape = _json_shaper(parsed, columns)
    return lambda values: serializer(shape(values), ctx)


# ---- records -> columns ----------------------------------------------------------------------------

def _payload_reader(columns: Columns, side: str) -> Callable[[Any], dict]:
    """A decoded record (a dict of fields, or one bare value) -> {column: value}."""
    read_struct = struct_reader(tuple(columns), path=side)
    only = columns[0] if len(columns) == 1 else None
    read_only = json_reader(only[1]) if only else None

    def read(payload: Any) -> dict:
        payload = _plain(payload)
        if only is not None:
            if not isinstance(payload, dict) or (only[1].name == "STRUCT" and not _has(payload, only[0])):
                return {only[0]: read_only(payload, f"{side}.{only[0]}")}
            if not _has(payload, only[0]) and len(payload) == 1:  # a one-field record of another name
                return {only[0]: read_only(next(iter(payload.values())), f"{side}.{only[0]}")}
        return read_struct(payload, side)
    return read


def _has(payload: dict, name: str) -> bool:
    return any(str(k).lower() == name.lower() for k in payload)


def _plain(value: Any) -> Any:
    """Decoded values as the JSON readers take them: times as epoch milliseconds."""
    if isinstance(value, datetime):
        return datetime_to_millis(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _message_reader(columns: Columns, side: str) -> Callable[[Any], dict]:
    read = _payload_reader(columns, side)
    return lambda message: read(_message_dict(message))


def _message_dict(message) -> dict:
    out = {}
    for field in message.DESCRIPTOR.fields:
        value = getattr(message, field.name)
        inner = field.message_type
        if inner is not None and inner.GetOptions().map_entry:
            is_message = inner.fields_by_name["value"].message_type is not None
            out[field.name] = {k: _message_dict(v) if is_message else v for k, v in value.items()}
        elif field.label == field.LABEL_REPEATED:
            out[field.name] = [_message_dict(v) if inner is not None else v for v in value]
        elif inner is not None:
            out[field.name] = _message_dict(value) if message.HasField(field.name) else None
        else:
            out[field.name] = value
    return out


# ---- columns -> records ------------------------------------------------------------------------------

def _message(cls, columns: Columns, values: Sequence[Any]):
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
                    target[_scalar(inner.fields_by_name["key"], k)] = _scalar(value_field, v)
        elif field.label == field.LABEL_REPEATED:
            for v in value:
                _fill(target.add(), v) if inner is not None else target.append(_scalar(field, v))
        elif inner is not None:
            _fill(target, value)
        else:
            setattr(message, field.name, _scalar(field, value))


def _scalar(field, value: Any) -> Any:
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
    import base64

    return base64.b64decode(value)


def _non_null(schema: Any) -> Any:
    if isinstance(schema, list):
        rest = [s for s in schema if s != "null"]
        return rest[0] if len(rest) == 1 else schema
    if isinstance(schema, dict) and "oneOf" in schema:
        rest = [s for s in schema["oneOf"] if s.get("type") != "null"]
        return rest[0] if len(rest) == 1 else schema
    return schema


def _avro_shaper(schema: Any, columns: Columns) -> Callable[[Sequence[Any]], Any]:
    names = [n for n, _ in columns]
    inner = _non_null(schema)
    if isinstance(inner, dict) and inner.get("type") == "record" and not (
            len(columns) == 1 and columns[0][1].name == "STRUCT" and not _named(inner, names[0])):
        return lambda values: _avro_value(dict(zip(names, values)), inner)
    return lambda values: _avro_value(values[0], schema)


def _named(record: dict, name: str) -> bool:
    return any(f["name"].lower() == name.lower() for f in record["fields"])


def _avro_value(value: Any, schema: Any) -> Any:
    if value is None:
        return None
    schema = _non_null(schema)
    kind = schema.get("type") if isinstance(schema, dict) else schema
    if kind == "record":
        lowered = {str(k).lower(): v for k, v in value.items()}
        return {f["name"]: _avro_value(lowered.get(f["name"].lower()), f["type"]) for f in schema["fields"]}
    if kind == "array":
        return [_avro_value(v, schema["items"]) for v in value]
    if kind == "map":
        return {str(k): _avro_value(v, schema["values"]) for k, v in value.items()}
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


def _json_shaper(schema: Any, columns: Columns) -> Callable[[Sequence[Any]], Any]:
    names = [n for n, _ in columns]
    inner = _non_null(schema)
    if isinstance(inner, dict) and "properties" in inner and not (
            len(columns) == 1 and columns[0][1].name == "STRUCT" and not _has(inner["properties"], names[0])):
        return lambda values: _json_value(dict(zip(names, values)), inner)
    return lambda values: _json_value(values[0], schema)


def _json_value(value: Any, schema: Any) -> Any:
    if value is None:
        return None
    schema = _non_null(schema) if isinstance(schema, dict) else {}
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        names = {p.lower(): p for p in properties}
        return {names.get(str(k).lower(), k): _json_value(v, properties.get(names.get(str(k).lower(), ""), {}))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_json_value(v, schema.get("items") or {}) for v in value]
    if isinstance(value, Decimal):
        return int(value) if schema.get("type") == "integer" else float(value)
    if isinstance(value, datetime):
        return datetime_to_millis(value)
    if isinstance(value, (bytes, bytearray)):
        import base64

        return base64.b64encode(bytes(value)).decode("ascii")
    return value
