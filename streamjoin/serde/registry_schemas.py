"""Schemas of a schema registry and SQL columns, both ways: the schema ksqlDB registers for
columns (AVRO, JSON Schema, PROTOBUF), and the columns a registered schema gives a declaration
that lists none (schema inference). Pure: no registry is called here (`registry_codecs` does)."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Sequence

from google.protobuf import descriptor_pb2

from streamjoin.dialect.types import SqlType
from streamjoin.serde.protoschema import F, columns_proto, parse_proto

Columns = Sequence[tuple[str, SqlType]]
SCHEMA_TYPES = {"AVRO": "AVRO", "PROTOBUF": "PROTOBUF", "JSON_SR": "JSON"}  # format -> registry schemaType
RECORD_NAME, NAMESPACE = "KsqlDataSourceSchema", "io.confluent.ksql.avro_schemas"
PROTO_MESSAGE = "ConnectDefault1"
_AVRO = {"BOOLEAN": "boolean", "INT": "int", "BIGINT": "long", "DOUBLE": "double", "FLOAT": "float",
         "STRING": "string", "BYTES": "bytes", "TIMESTAMP": {"type": "long", "logicalType": "timestamp-millis"},
         "DATE": {"type": "int", "logicalType": "date"}, "TIME": {"type": "int", "logicalType": "time-millis"}}
_JSON = {"BOOLEAN": {"type": "boolean"}, "INT": {"type": "integer", "connect.type": "int32"},
         "BIGINT": {"type": "integer", "connect.type": "int64"}, "DOUBLE": {"type": "number"},
         "FLOAT": {"type": "number"}, "STRING": {"type": "string"}, "DECIMAL": {"type": "number"},
         "BYTES": {"type": "string", "connect.type": "bytes"}, "TIMESTAMP": {"type": "integer"},
         "DATE": {"type": "integer"}, "TIME": {"type": "integer"}}


class SchemaError(ValueError):
    """A registered schema that SQL columns cannot be read from, or columns no schema holds."""


def schema_for(fmt: str, columns: Columns, bare: bool) -> str:
    """The schema text ksqlDB registers for `columns` in format `fmt`; `bare`: one column written
    as its value alone (a single key column, an unwrapped single value)."""
    if fmt == "PROTOBUF":
        return columns_proto(PROTO_MESSAGE, columns)
    if fmt == "AVRO":
        if bare:
            return json.dumps(_avro_type(columns[0][1], columns[0][0]))
        return json.dumps({"type": "record", "name": RECORD_NAME, "namespace": NAMESPACE,
                           "fields": [{"name": n, "type": _avro_field(t, n), "default": None}
                                      for n, t in columns]})
    if bare:
        return json.dumps(_json_type(columns[0][1]))
    return json.dumps(_json_object(columns))


def _avro_field(t: SqlType, name: str) -> list:
    """A nullable field's type: null or the column's type (a union is flattened into it)."""
    inner = _avro_type(t, name)
    return ["null", *inner] if isinstance(inner, list) else ["null", inner]


def _avro_type(t: SqlType, name: str) -> Any:
    if t.name == "DECIMAL":
        return {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    if t.name == "ARRAY":
        return {"type": "array", "items": _avro_field(t.elements[0], name)}
    if t.name == "MAP":
        return {"type": "map", "values": _avro_field(t.elements[1], name)}
    if t.name == "STRUCT":
        return {"type": "record", "name": f"{RECORD_NAME}_{name}",
                "fields": [{"name": n, "type": _avro_field(ft, f"{name}_{n}"), "default": None}
                           for n, ft in t.fields]}
    if t.name == "ANY":  # a result the planner cannot type: the value's own kind, at write time
        return ["long", "double", "string", "boolean", "bytes"]
    if t.name not in _AVRO:
        raise SchemaError(f"column {name} of type {t} has no Avro type")
    return _AVRO[t.name]


def _json_type(t: SqlType) -> dict:
    if t.name == "ARRAY":
        return {"type": "array", "items": _optional(_json_type(t.elements[0]))}
    if t.name == "MAP":
        return {"type": "object", "additionalProperties": _optional(_json_type(t.elements[1]))}
    if t.name == "ANY":
        return {}
    if t.name == "STRUCT":
        return _json_object(t.fields)
    if t.name not in _JSON:
        raise SchemaError(f"type {t} has no JSON Schema type")
    return dict(_JSON[t.name])


def _json_object(columns: Columns) -> dict:
    return {"type": "object", "properties": {n: _optional(_json_type(t)) for n, t in columns}}


def _optional(schema: dict) -> dict:
    return {"oneOf": [{"type": "null"}, schema]} if schema else schema  # {} (ANY) takes null already


# ---- inference: a registered schema -> columns ---------------------------------------------------

def inferred_columns(schema_type: str, text: str, full_name: str | None, key_name: str) -> list[tuple[str, SqlType]]:
    """The columns a schema gives: a record's / object's / message's fields in order, or one
    column named `key_name` for a schema of a single primitive (a key)."""
    if schema_type == "PROTOBUF":
        file = proto_file(text)
        return _message_columns(file, _message(file, full_name))
    parsed = json.loads(text)
    if schema_type == "AVRO":
        if isinstance(parsed, dict) and parsed.get("type") == "record":
            return [(f["name"], _from_avro(f["type"])) for f in parsed["fields"]]
        return [(key_name, _from_avro(parsed))]
    parsed = non_null(parsed)
    if parsed.get("type") == "object" and "properties" in parsed:
        return [(n, _from_json(s)) for n, s in parsed["properties"].items()]
    return [(key_name, _from_json(parsed))]


def proto_file(text: str) -> descriptor_pb2.FileDescriptorProto:
    """A PROTOBUF schema as `.proto` text, or a base64 FileDescriptorProto (as some clients register)."""
    try:
        return parse_proto(text)
    except ValueError:
        try:
            return descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text, validate=True))
        except (binascii.Error, ValueError):
            raise SchemaError("a PROTOBUF schema that is neither .proto text nor a serialized descriptor") from None


def _message(file: descriptor_pb2.FileDescriptorProto, full_name: str | None) -> descriptor_pb2.DescriptorProto:
    if full_name is None:
        return file.message_type[0]
    wanted = full_name.split(".")[-1] if "." in full_name else full_name
    for message in file.message_type:
        if message.name == wanted:
            return message
    raise SchemaError(f"the schema has no message {full_name}: it has {', '.join(m.name for m in file.message_type)}")


_PROTO_SQL = {F.TYPE_DOUBLE: "DOUBLE", F.TYPE_FLOAT: "DOUBLE", F.TYPE_INT64: "BIGINT", F.TYPE_UINT64: "BIGINT",
              F.TYPE_INT32: "INT", F.TYPE_UINT32: "BIGINT", F.TYPE_FIXED64: "BIGINT", F.TYPE_FIXED32: "BIGINT",
              F.TYPE_BOOL: "BOOLEAN", F.TYPE_STRING: "STRING", F.TYPE_BYTES: "BYTES", F.TYPE_SINT32: "INT",
              F.TYPE_SINT64: "BIGINT", F.TYPE_SFIXED32: "INT", F.TYPE_SFIXED64: "BIGINT", F.TYPE_ENUM: "STRING"}


def _message_columns(file, message) -> list[tuple[str, SqlType]]:
    nested = {f".{file.package}.{message.name}.{m.name}" if file.package else f".{message.name}.{m.name}": m
              for m in message.nested_type}
    tops = {f".{file.package}.{m.name}" if file.package else f".{m.name}": m for m in file.message_type}
    return [(field.name, _proto_field(file, field, {**tops, **nested})) for field in message.field]


def _proto_field(file, field, messages: dict) -> SqlType:
    if field.type == F.TYPE_MESSAGE:
        inner = messages.get(field.type_name)
        if inner is None:
            raise SchemaError(f"field {field.name}: message {field.type_name} is not in the schema")
        if inner.options.map_entry:
            key, value = (_proto_field(file, f, messages) for f in inner.field)
            return SqlType.parse(f"MAP<{key}, {value}>")
        kind = SqlType.parse("STRUCT<" + ", ".join(f"`{n}` {t}" for n, t in _message_columns(file, inner)) + ">")
    else:
        kind = SqlType.parse(_PROTO_SQL[field.type])
    return SqlType.parse(f"ARRAY<{kind}>") if field.label == F.LABEL_REPEATED else kind


def non_null(schema: Any) -> Any:
    """The schema a nullable union wraps (`["null", T]`, `{"oneOf": [{"type": "null"}, T]}`)."""
    if isinstance(schema, list):
        rest = [s for s in schema if s != "null"]
        return rest[0] if len(rest) == 1 else schema
    if isinstance(schema, dict) and "oneOf" in schema:
        rest = [s for s in schema["oneOf"] if s.get("type") != "null"]
        return rest[0] if len(rest) == 1 else schema
    return schema


def _from_avro(schema: Any) -> SqlType:
    schema = non_null(schema)
    if isinstance(schema, dict):
        logical, kind = schema.get("logicalType"), schema.get("type")
        if logical == "decimal":
            return SqlType.parse(f"DECIMAL({schema['precision']}, {schema.get('scale', 0)})")
        if logical in ("timestamp-millis", "timestamp-micros"):
            return SqlType.parse("TIMESTAMP")
        if kind == "array":
            return SqlType.parse(f"ARRAY<{_from_avro(schema['items'])}>")
        if kind == "map":
            return SqlType.parse(f"MAP<STRING, {_from_avro(schema['values'])}>")
        if kind == "record":
            return SqlType.parse("STRUCT<" + ", ".join(f"`{f['name']}` {_from_avro(f['type'])}"
                                                       for f in schema["fields"]) + ">")
        return _from_avro(kind)
    names = {"int": "INT", "long": "BIGINT", "double": "DOUBLE", "float": "DOUBLE", "string": "STRING",
             "boolean": "BOOLEAN", "bytes": "BYTES", "enum": "STRING"}
    if schema not in names:
        raise SchemaError(f"an Avro {schema!r} has no SQL type")
    return SqlType.parse(names[schema])


def _from_json(schema: dict) -> SqlType:
    schema = non_null(schema)
    kind = schema.get("type")
    if kind == "integer":
        return SqlType.parse("INT" if schema.get("connect.type") in ("int32", "int16", "int8") else "BIGINT")
    if kind == "array":
        return SqlType.parse(f"ARRAY<{_from_json(schema.get('items', {'type': 'string'}))}>")
    if kind == "object" and "properties" in schema:
        return SqlType.parse("STRUCT<" + ", ".join(f"`{n}` {_from_json(s)}" for n, s in schema["properties"].items())
                             + ">")
    if kind == "object":
        return SqlType.parse(f"MAP<STRING, {_from_json(schema.get('additionalProperties', {'type': 'string'}))}>")
    names = {"number": "DOUBLE", "string": "STRING", "boolean": "BOOLEAN"}
    if kind == "string" and schema.get("connect.type") == "bytes":
        return SqlType.parse("BYTES")
    if kind not in names:
        raise SchemaError(f"a JSON Schema {json.dumps(schema)[:60]} has no SQL type")
    return SqlType.parse(names[kind])
