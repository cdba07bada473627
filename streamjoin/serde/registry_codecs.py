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

import io
import json
import struct
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient, prefix_schema_id_deserializer
from confluent_kafka.schema_registry.common.serde import SchemaId
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError
from fastavro import parse_schema, schemaless_reader, schemaless_writer
from jsonschema.exceptions import SchemaError
from referencing.exceptions import Unresolvable

from streamjoin.dialect.types import SqlType
from streamjoin.plan import inference
from streamjoin.plan.registry_columns import INFERRED_KEY
from streamjoin.serde.protoschema import columns_proto, file_message_class
from streamjoin.serde.registry_schemas import SCHEMA_TYPES, inferred_columns, proto_file, schema_for
from streamjoin.serde.registry_values import avro_shaper, json_shaper, message_of, message_reader, payload_reader
from streamjoin.serde.values import DecodeError, EncodeError

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
    format (`RegistryCodec`'s read and write), or in PROTOBUF_NOSR."""
    if fmt == "PROTOBUF_NOSR":
        cls = file_message_class(proto_file(columns_proto(PROTO_NOSR, columns)).SerializeToString())
        read_message = message_reader(columns, side)
        return (lambda data: read_message(_parsed(cls, data, side))), (lambda values: message_of(cls, columns, values)
                                                                      .SerializeToString())
    codec = RegistryCodec(fmt, columns, side, bare, topic, registry, (schema_id, full_name, register))
    return codec.read, codec.write


class RegistryCodec:
    """One side's record path in a registry format: confluent-kafka's deserializer and serializer
    of it, each built on its first use (the registry is asked on the first record, in the task)
    and kept, with what it was built from (`reader_class`, `writer`), which runs of records
    (serde.registry_runs) take as they are."""

    def __init__(self, fmt: str, columns: Columns, side: str, bare: bool, topic: str | None,
                 registry: Registry | None, writer: tuple[int | None, str | None, bool]) -> None:
        if registry is None:
            raise EncodeError("no schema registry is configured: set STREAMJOIN_SCHEMA_REGISTRY_URL, or start the "
                              "project's own with `streamjoin registry start`")
        self.fmt, self.columns, self.side, self.bare, self.topic = fmt, tuple(columns), side, bare, topic or ""
        self.registry, self.schema_id, self.full_name, self.register = registry, *writer
        self.read_fields = message_reader(columns, side) if fmt == "PROTOBUF" else payload_reader(columns, side)
        self.decimals: dict[int, Any] = {}  # AVRO schema id -> its parsed schema if a bare decimal, else None
        self.decoder: tuple[Any, Any] | None = None  # (deserializer, its PROTOBUF message class)
        self.encoder: tuple[int, Schema, Callable[[Sequence[Any]], bytes]] | None = None

    def read(self, data: bytes) -> dict | None:
        deserializer = self._decoding()[0]
        try:
            payload = deserializer(data, _ctx(self.topic, self.side))
        except (SerializationError, SchemaRegistryError, SchemaError, Unresolvable, ValueError, TypeError, KeyError,
                IndexError, EOFError, struct.error) as error:  # not this format: a dead letter, never a failed query
            raise DecodeError(f"{self.side}: not {self.fmt} of the registry's schema "
                              f"({type(error).__name__}: {error})") from None
        if type(payload) is bytes and self.fmt == "AVRO":
            payload = self._decimal(data, payload)
        try:
            return None if payload is None else self.read_fields(payload)
        except TypeError as error:  # a field of a kind its column does not read (bytes into a STRING...)
            raise DecodeError(f"{self.side}: {type(error).__name__}: {error}") from None

    def _decimal(self, data: bytes, payload: bytes) -> Any:
        """A payload the deserializer left undecoded (its writer's schema is `bytes`): the decimal
        in it where that schema is a decimal's (`_decimal_bytes`), else the bytes."""
        framing = SchemaId("AVRO")
        prefix_schema_id_deserializer(data, None, framing)
        schema_id = framing.id
        if schema_id is None:  # framed with a GUID: left as the deserializer gives it
            return payload
        if schema_id not in self.decimals:
            written = json.loads(new_client(self.registry).get_schema(schema_id).schema_str)
            self.decimals[schema_id] = parse_schema(written) if _bytes_decimal(written) else None
        if self.decimals[schema_id] is None:
            return payload
        try:
            return schemaless_reader(io.BytesIO(payload), self.decimals[schema_id], None)
        except (ValueError, TypeError, EOFError, IndexError) as error:
            raise DecodeError(f"{self.side}: not an AVRO decimal ({type(error).__name__}: {error})") from None

    def write(self, values: Sequence[Any]) -> bytes:
        encode = self.writer()[2]  # (a registry that cannot give the writer's schema fails the query)
        try:
            return encode(values)
        except (SerializationError, SchemaRegistryError) as error:
            raise EncodeError(f"does not fit the {self.fmt} schema of {subject(self.topic, self.side)}: "
                              f"{error}") from None

    def reader_class(self):
        """The message class the PROTOBUF deserializer parses with."""
        return self._decoding()[1]

    def _decoding(self) -> tuple[Any, Any]:
        if self.decoder is None:  # built on the first record
            self.decoder = _decoder(self.fmt, self.registry, self.topic, self.side, self.full_name)
        return self.decoder

    def writer(self) -> tuple[int, Schema, Callable[[Sequence[Any]], bytes]]:
        """(schema id, schema, values -> bytes) the serializer writes with, built once."""
        if self.encoder is None:
            self.encoder = _encoder(self.fmt, self.registry, self.topic, self.side, self.columns, self.bare,
                                    self.schema_id, self.full_name, self.register)
        return self.encoder


PROTO_NOSR = "ConnectDefault1"


def _parsed(cls, data: bytes, side: str):
    try:
        return cls.FromString(data)
    except Exception as error:  # noqa: BLE001 - protobuf's DecodeError and its C variant share no base
        raise DecodeError(f"{side}: not a PROTOBUF_NOSR message ({error})") from None


def _decoder(fmt: str, registry: Registry, topic: str, side: str, full_name: str | None) -> tuple[Any, Any]:
    """(deserializer, the message class it parses with: PROTOBUF's, None for the others)."""
    # A client per codec (per task and topic): ids a registry gives out again (a test's fixed ids)
    # are never read from another codec's cache.
    sr = new_client(registry)
    if fmt == "AVRO":
        return AvroDeserializer(sr), None
    if fmt == "JSON_SR":
        return JSONDeserializer(None, schema_registry_client=sr), None
    _, schema = writer_schema(registry, subject(topic, side), fmt, (), False)  # the subject's latest
    cls = file_message_class(proto_file(schema.schema_str).SerializeToString(), full_name)
    return ProtobufDeserializer(cls, {"use.deprecated.format": False}, sr), cls


def _encoder(fmt: str, registry: Registry, topic: str, side: str, columns: Columns, bare: bool, schema_id: int | None,
             full_name: str | None, register: bool) -> tuple[int, Schema, Callable[[Sequence[Any]], bytes]]:
    sr, ctx = new_client(registry), _ctx(topic, side)
    sid, schema = writer_schema(registry, subject(topic, side), fmt, columns, bare, schema_id, register)
    conf = {"auto.register.schemas": False, "use.schema.id": sid}
    if fmt == "PROTOBUF":
        cls = file_message_class(proto_file(schema.schema_str).SerializeToString(), full_name)
        serializer = ProtobufSerializer(cls, sr, {**conf, "use.deprecated.format": False})
        return sid, schema, lambda values: serializer(message_of(cls, columns, values), ctx)
    parsed = json.loads(schema.schema_str)
    if fmt == "AVRO":
        serializer = AvroSerializer(sr, schema.schema_str, conf=conf)
        shape = avro_shaper(parsed, columns)
        if _bytes_decimal(parsed):
            shape = _decimal_bytes(parsed, shape)
    else:
        serializer = JSONSerializer(schema.schema_str, sr, conf=conf)
        shape = json_shaper(parsed, columns)
    return sid, schema, lambda values: serializer(shape(values), ctx)


def _bytes_decimal(schema: Any) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "bytes" and schema.get("logicalType") == "decimal"


def _decimal_bytes(schema: dict, shape: Callable[[Sequence[Any]], Any]) -> Callable[[Sequence[Any]], bytes | None]:
    """A bare DECIMAL value as Avro encodes it, for the serializer to write as it is: confluent-kafka
    writes and reads the value of a schema that is `bytes` without Avro's encoding, logical type or
    not, where Avro's own writers (ksqlDB's) encode the decimal."""
    parsed = parse_schema(schema)

    def encode(values: Sequence[Any]) -> bytes | None:
        value = shape(values)
        if value is None:
            return None
        buffer = io.BytesIO()
        schemaless_writer(buffer, parsed, value)
        return buffer.getvalue()
    return encode
