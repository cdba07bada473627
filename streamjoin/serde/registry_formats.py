"""What a run of records (serde.registry_runs) does in each registry format: a schema's reader
(framed payloads -> one list of raw field values per column) and writer (columns -> framed keys or
values), each made once per schema, or None where the schema's shape is not one a run takes.
Fields match columns by the record path's rules (serde.registry_values); a side of one column
whose schema is no record (a bare key, an unwrapped value) reads and writes the whole value as
that column, as the record path does, and so does one STRUCT column no field of the record is
named for."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, Callable

from confluent_kafka.schema_registry import Schema, prefix_schema_id_serializer
from confluent_kafka.schema_registry._sync.json_schema import _resolve_named_schema
from confluent_kafka.schema_registry.common.avro import _schema_loads, parse_schema_with_repo
from confluent_kafka.schema_registry.common.json_schema import _json_dumps, _json_loads
from confluent_kafka.schema_registry.common.protobuf import _create_index_array
from confluent_kafka.schema_registry.common.serde import SchemaId
from fastavro import schemaless_reader, schemaless_writer
from jsonschema.validators import validator_for

from streamjoin.serde.protoschema import file_message_class
from streamjoin.serde.registry_schemas import non_null, proto_file
from streamjoin.serde.registry_values import avro_value, json_value, proto_scalar
from streamjoin.serde.values import ABSENT

Reader = Callable[[list[io.BytesIO]], list[list]]
Writer = Callable[[list[list]], list[bytes]]


@dataclass(frozen=True)
class RunFormat:
    """A registry format's runs: `reader(schema, runs)` and `writer(schema, runs, schema id)`,
    `runs` the SideRuns asking (its columns, its record path's `codec`, its registry client)."""

    name: str
    schema_type: str  # the framing's (SchemaId's) and the registry's name for it
    reader: Callable[[Schema, Any], Reader | None]
    writer: Callable[[Schema, Any, int], Writer | None]
    shortest: int = 0  # bytes of the shortest value the deserializer takes


def resolved(field_names: list[str], column_names: list[str]) -> list[str | None] | None:
    """The field each column reads: the same name, else the last field of that name in another
    case, else none (NULL); None where a single column has no field (the record path reads the
    record's one field, or the whole value, into it)."""
    lowered = {name.lower(): name for name in field_names}
    out = [name if name in field_names else lowered.get(name.lower()) for name in column_names]
    return None if len(out) == 1 and out[0] is None else out


def _framed(fmt: str, schema_id: int, indexes: list[int] | None = None) -> bytes:
    return prefix_schema_id_serializer(b"", None, SchemaId(fmt, schema_id, None, indexes))


def _shaped(column: list, shape: Callable[[Any, Any], Any], schema: Any, exact: type | None) -> list:
    """`shape(value, schema)` of each value; a column all of `exact` (or None) as it is, which
    `shape` would return unchanged."""
    if exact is not None and set(map(type, column)) <= {exact, type(None)}:
        return column
    return [shape(value, schema) for value in column]


def _whole(runs, field_names: list[str] | None, record: bool) -> bool:
    """Whether a side's one column reads each whole value: the schema holds no record (a bare
    key, an unwrapped value), or the column is a STRUCT no field of the record is named for."""
    if len(runs.columns) != 1:
        return False
    name, sql_type = runs.columns[0]
    if sql_type.name == "MAP":  # the record path reads a map of one entry as a record of one field
        return False
    if not record:
        return True
    return field_names is not None and sql_type.name == "STRUCT" and name.lower() not in {f.lower() for f in field_names}


def _no_null(values: list) -> list:
    """Whole values, where none is NULL: the record path reads a NULL one as no value at all."""
    if any(value is None for value in values):
        raise ValueError("a NULL whole value")
    return values


def _whole_writer(encode: Callable[[Any], bytes]) -> Writer:
    """Writes one column's values as whole values; NULL as no value, as the serializers write it."""
    return lambda columns: [None if value is None else encode(value) for value in columns[0]]


# ---- AVRO ----------------------------------------------------------------------------------------

_AVRO_EXACT = {"long": int, "int": int, "double": float, "float": float, "string": str, "boolean": bool}


def _avro_parsed(schema: Schema) -> Any:
    return parse_schema_with_repo(_schema_loads(schema.schema_str).schema_str, {})  # as the serializers parse


def _avro_reader(schema: Schema, runs) -> Reader | None:
    parsed = _avro_parsed(schema)
    if _raw_bytes(parsed):
        return None
    record = isinstance(parsed, dict) and parsed.get("type") == "record"
    field_names = [field["name"] for field in parsed["fields"]] if record else None
    if _whole(runs, field_names, _holds_record(parsed)):
        return lambda payloads: [_no_null([schemaless_reader(payload, parsed, None) for payload in payloads])]
    if not record:
        return None
    names = resolved(field_names, [n for n, _ in runs.columns])
    if names is None:
        return None

    def read(payloads: list[io.BytesIO]) -> list[list]:
        records = [schemaless_reader(payload, parsed, None) for payload in payloads]
        return [[record[name] for record in records] if name else [None] * len(records) for name in names]
    return read


def _avro_writer(schema: Schema, runs, schema_id: int) -> Writer | None:
    whole = json.loads(schema.schema_str)
    record = non_null(whole)
    columns = [n.lower() for n, _ in runs.columns]
    parsed, prefix = _avro_parsed(schema), _framed("AVRO", schema_id)
    if _raw_bytes(parsed):
        return None
    if not isinstance(record, dict) or record.get("type") != "record" or (
            len(columns) == 1 and runs.columns[0][1].name == "STRUCT" and
            columns[0] not in {f["name"].lower() for f in record["fields"]}):  # the serializer's whole value
        if len(columns) != 1:
            return None
        return _whole_writer(lambda value: _avro_bytes(parsed, avro_value(value, whole), prefix))
    sources = {name: at for at, name in enumerate(columns)}  # the last column of a name wins
    fields = [(f["name"], sources.get(f["name"].lower()), f["type"]) for f in record["fields"]]
    names = [name for name, _, _ in fields]

    def write(payload_columns: list[list]) -> list[bytes]:
        size = len(payload_columns[0])
        shaped = [[None] * size if at is None else _shaped(payload_columns[at], avro_value, field_type,
                                                           _AVRO_EXACT.get(_kind(field_type)))
                  for _, at, field_type in fields]
        return [_avro_bytes(parsed, dict(zip(names, values)), prefix) for values in zip(*shaped)]
    return write


def _avro_bytes(parsed: Any, value: Any, prefix: bytes) -> bytes:
    buffer = io.BytesIO()
    schemaless_writer(buffer, parsed, value, strict=False, strict_allow_default=False)
    return prefix + buffer.getvalue()


def _raw_bytes(parsed: Any) -> bool:
    """A schema that is `bytes` (a DECIMAL's too): the serializers write and read its value without
    Avro's encoding (registry_codecs), so runs leave it to them."""
    return parsed == "bytes" or (isinstance(parsed, dict) and parsed.get("type") == "bytes")


def _holds_record(parsed: Any) -> bool:
    """Whether an Avro schema is a record, or a union with one."""
    if isinstance(parsed, list):
        return any(map(_holds_record, parsed))
    return isinstance(parsed, dict) and parsed.get("type") == "record"


def _kind(field_type: Any) -> str | None:
    """A primitive field's type name (None for any other field, a logical type, a union of several)."""
    inner = non_null(field_type)
    if isinstance(inner, dict) and "logicalType" not in inner:
        inner = inner.get("type")
    return inner if isinstance(inner, str) else None


# ---- JSON_SR -------------------------------------------------------------------------------------

_JSON_EXACT = {str, int, float, bool, type(None)}  # values `json_value` returns as they are


def _validator(schema: Schema, runs):
    """The validator the serializers make of `schema`."""
    parsed = _json_loads(schema.schema_str)
    cls = validator_for(parsed)
    cls.check_schema(parsed)
    return parsed, cls(parsed, registry=_resolve_named_schema(schema, runs.registry_client()))


def _json_reader(schema: Schema, runs) -> Reader:
    _, validator = _validator(schema, runs)
    names = [n for n, _ in runs.columns]

    def read(payloads: list[io.BytesIO]) -> list[list]:
        objects = [_json_loads(payload.read()) for payload in payloads]
        for value in objects:
            validator.validate(value)
        if len(names) == 1 and not any(type(value) is dict for value in objects):  # bare: whole values
            return [_no_null(objects)]
        columns = [[value.get(name, ABSENT) for value in objects] for name in names]
        if any(ABSENT in column for column in columns):  # the record path matches names in any case
            raise ValueError("a field absent or spelled in another case")
        return columns
    return read


def _json_writer(schema: Schema, runs, schema_id: int) -> Writer | None:
    parsed, validator = _validator(schema, runs)
    inner = non_null(parsed)
    properties = inner.get("properties") if isinstance(inner, dict) else None
    columns = [n for n, _ in runs.columns]
    spelled = {p.lower(): p for p in properties or {}}
    prefix = _framed("JSON", schema_id)
    if properties is None or (len(columns) == 1 and runs.columns[0][1].name == "STRUCT" and
                              columns[0].lower() not in spelled):  # the serializer's whole value
        return None if len(columns) != 1 else _whole_writer(lambda value: _json_bytes(
            validator, json_value(value, parsed), prefix))
    keys = [spelled.get(name.lower(), name) for name in columns]
    if len(set(keys)) != len(keys):
        return None
    schemas = [properties.get(spelled.get(name.lower(), ""), {}) for name in columns]

    def write(payload_columns: list[list]) -> list[bytes]:
        shaped = [column if set(map(type, column)) <= _JSON_EXACT else [json_value(v, s) for v in column]
                  for column, s in zip(payload_columns, schemas)]
        return [_json_bytes(validator, dict(zip(keys, values)), prefix) for values in zip(*shaped)]
    return write


def _json_bytes(validator, value: Any, prefix: bytes) -> bytes:
    validator.validate(value)
    return prefix + _json_dumps(value).encode("utf8")


# ---- PROTOBUF ------------------------------------------------------------------------------------

def _scalar_fields(cls, runs) -> list | None:
    """The message's field each column reads or writes (None: no field), all of them scalars."""
    by_name = {f.name.lower(): f for f in cls.DESCRIPTOR.fields}
    fields = [by_name.get(n.lower()) for n, _ in runs.columns]
    if len(fields) == 1 and fields[0] is None and len(by_name) == 1:
        fields = list(by_name.values())  # one column, one field: the record path pairs them
    if any(f is not None and (f.message_type is not None or f.is_repeated) for f in fields):
        return None
    return fields


def _proto_reader(schema: Schema, runs) -> Reader | None:
    cls = runs.codec.reader_class()  # the class the deserializer parses with
    names = resolved([f.name for f in cls.DESCRIPTOR.fields], [n for n, _ in runs.columns])
    if names is None or _scalar_fields(cls, runs) is None:
        return None

    decimals = [t.name == "DECIMAL" for _, t in runs.columns]  # "" is NULL (registry_values._blanker)

    def read(payloads: list[io.BytesIO]) -> list[list]:
        messages = [cls.FromString(payload.read()) for payload in payloads]
        columns = [[getattr(m, name) for m in messages] if name else [None] * len(messages) for name in names]
        return [[None if v == "" else v for v in column] if decimal else column
                for column, decimal in zip(columns, decimals)]
    return read


def _proto_writer(schema: Schema, runs, schema_id: int) -> Writer | None:
    cls = file_message_class(proto_file(schema.schema_str).SerializeToString(), runs.codec.full_name)  # the serializer's
    fields = _scalar_fields(cls, runs)
    if fields is None:
        return None
    written = [(at, f) for at, f in enumerate(fields) if f is not None]
    names = [f.name for _, f in written]
    prefix = _framed("PROTOBUF", schema_id, _create_index_array(cls.DESCRIPTOR))

    def write(payload_columns: list[list]) -> list[bytes]:
        shaped = [[None if v is None else proto_scalar(f, v) for v in payload_columns[at]] for at, f in written]
        return [prefix + cls(**{n: v for n, v in zip(names, values) if v is not None}).SerializeToString()
                for values in zip(*shaped)]
    return write


FORMATS = {"AVRO": RunFormat("AVRO", "AVRO", _avro_reader, _avro_writer, shortest=6),
           "JSON_SR": RunFormat("JSON_SR", "JSON", _json_reader, _json_writer),
           "PROTOBUF": RunFormat("PROTOBUF", "PROTOBUF", _proto_reader, _proto_writer)}
