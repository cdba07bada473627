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
import struct
from dataclasses import dataclass
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
    format. Built lazily: the registry is asked on the first record, in the task."""
    if fmt == "PROTOBUF_NOSR":
        cls = file_message_class(proto_file(columns_proto(PROTO_NOSR, columns)).SerializeToString())
        read_message = message_reader(columns, side)
        return (lambda data: read_message(_parsed(cls, data, side))), (lambda values: message_of(cls, columns, values)
                                                                      .SerializeToString())
    if registry is None:
        raise EncodeError("no schema registry is configured: set STREAMJOIN_SCHEMA_REGISTRY_URL, or start the "
                          "project's own with `streamjoin registry start`")
    state: dict[str, Any] = {}
    read_fields = message_reader(columns, side) if fmt == "PROTOBUF" else payload_reader(columns, side)

    def read(data: bytes) -> dict | None:
        decode = state.get("decode") or state.setdefault("decode", _decoder(fmt, registry, topic, side, full_name))
        try:
            payload = decode(data, _ctx(topic or "", side))
        except (SerializationError, SchemaRegistryError, ValueError, TypeError, KeyError, IndexError, EOFError,
                struct.error) as error:  # bytes that are not this format: a dead letter, never a failed query
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
    cls = subject_message_class(registry, topic, side, full_name)
    return ProtobufDeserializer(cls, {"use.deprecated.format": False}, sr)


def subject_message_class(registry: Registry, topic: str | None, side: str, full_name: str | None):
    """The message class a PROTOBUF reader parses with: `full_name` (default: the first message)
    of the subject's latest schema."""
    _, schema = writer_schema(registry, subject(topic or "", side), "PROTOBUF", (), False)
    return file_message_class(proto_file(schema.schema_str).SerializeToString(), full_name)


def _encoder(fmt: str, registry: Registry, topic: str | None, side: str, columns: Columns, bare: bool,
             schema_id: int | None, full_name: str | None, register: bool) -> Callable[[Sequence[Any]], bytes]:
    sr, ctx = new_client(registry), _ctx(topic or "", side)
    sid, schema = writer_schema(registry, subject(topic or "", side), fmt, columns, bare, schema_id, register)
    conf = {"auto.register.schemas": False, "use.schema.id": sid}
    if fmt == "PROTOBUF":
        cls = file_message_class(proto_file(schema.schema_str).SerializeToString(), full_name)
        serializer = ProtobufSerializer(cls, sr, {**conf, "use.deprecated.format": False})
        return lambda values: serializer(message_of(cls, columns, values), ctx)
    parsed = json.loads(schema.schema_str)
    if fmt == "AVRO":
        serializer = AvroSerializer(sr, schema.schema_str, conf=conf)
        shape = avro_shaper(parsed, columns)
    else:
        serializer = JSONSerializer(schema.schema_str, sr, conf=conf)
        shape = json_shaper(parsed, columns)
    return lambda values: serializer(shape(values), ctx)
