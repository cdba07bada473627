"""Runs of registry-encoded keys or values (AVRO, PROTOBUF, JSON_SR) decoded and encoded together.

The record path (serde.registry_codecs) calls a confluent-kafka serializer once per record, and
most of such a call is bookkeeping around the format's own reader or writer: the subject's name,
the schema's caches, a look for data-contract rules, the framing. A run does that bookkeeping once
per schema id, then calls what the serializers call, record by record: the library's framing,
fastavro's schemaless reader and writer, the protobuf message's parser and serializer, the JSON
parser, the schema's validator and the JSON writer. Columns are read and shaped a column at a
time (serde.batches). A run writes with the schema the record path's serializer writes with, and
reads PROTOBUF with the message class its deserializer parses with (`RegistryCodec`); the first
record of each schema id goes through the deserializer itself, so a run takes a schema id only
once the record path has accepted it.

A run is not taken where it could differ from the record path: a schema with rules or
references, a value framed with a schema GUID, a record that does not decode or validate, a
JSON field spelled in another case than its column, a PROTOBUF message field or repeated field
among the columns, a NULL among whole values (one column's, not wrapped in a record). The record
path then decodes each record, and says why one fails; a run that cannot be written raises an
EncodeError, and its caller writes its rows one by one.
"""

from __future__ import annotations

import io
from typing import Any, Callable

from confluent_kafka.schema_registry import Schema, prefix_schema_id_deserializer
from confluent_kafka.schema_registry.common.serde import SchemaId

from streamjoin.serde.registry_codecs import RegistryCodec, new_client
from streamjoin.serde.registry_formats import FORMATS, RunFormat
from streamjoin.serde.registry_values import plain
from streamjoin.serde.values import EncodeError, field_readers

ReadRun = Callable[[list[bytes]], "list[list] | None"]
WriteRun = Callable[[list[list]], list[bytes]]

_UNSET = object()
_PLAIN = frozenset((int, float, str, bool, type(None)))  # values `plain` returns as they are


def side_runs(codec: Any) -> tuple[ReadRun, WriteRun] | None:
    """(read a run of keys' or values' bytes into their columns or None, write columns) for a side
    whose record path is `codec`; None where it is no registry format's `RegistryCodec`."""
    if not isinstance(codec, RegistryCodec) or codec.fmt not in FORMATS:
        return None
    runs = SideRuns(FORMATS[codec.fmt], codec)
    return runs.read, runs.write


class SideRuns:
    """One side's runs (a key's or a value's): plans per schema id (reading) and for the writer's
    schema (writing), each made on first use, in the task."""

    def __init__(self, fmt: RunFormat, codec: RegistryCodec) -> None:
        self.fmt, self.codec, self.columns = fmt, codec, codec.columns
        self.fields = field_readers(self.columns, codec.side)
        self.read_plans: dict[tuple, Any] = {}
        self.write_plan: Any = _UNSET
        self.client = None

    # ---- reading ----------------------------------------------------------------------------------

    def read(self, datas: list[bytes]) -> list[list] | None:
        """The columns of a run of keys or values, or None where the record path decodes them."""
        try:
            frames = [self._frame(data) for data in datas]
        except Exception:  # noqa: BLE001 - a null value, a value not framed: the record path says why
            return None
        groups: dict[tuple, list[int]] = {}
        for at, (key, _) in enumerate(frames):
            groups.setdefault(key, []).append(at)
        out: list[list] = [[None] * len(datas) for _ in self.columns]
        for key, ats in groups.items():
            columns = self._group(key, [frames[at][1] for at in ats], datas[ats[0]])
            if columns is None:
                return None
            if len(groups) == 1:
                return columns
            for whole, part in zip(out, columns):
                for at, value in zip(ats, part):
                    whole[at] = value
        return out

    def _frame(self, data: bytes) -> tuple[tuple, io.BytesIO]:
        if len(data) < self.fmt.shortest:
            raise ValueError("shorter than the framing and a payload")
        schema_id = SchemaId(self.fmt.schema_type)
        payload = prefix_schema_id_deserializer(data, None, schema_id)
        if schema_id.id is None:
            raise ValueError("framed with a schema GUID")
        return (schema_id.id, tuple(schema_id.message_indexes or ())), payload

    def _group(self, key: tuple, payloads: list[io.BytesIO], first: bytes) -> list[list] | None:
        plan = self.read_plans.get(key, _UNSET)
        if plan is _UNSET:
            try:
                self.codec.read(first)  # the deserializer takes this schema id (and message indexes)
                plan = self._plan(self.fmt.reader, self._schema(key[0]))
            except Exception:  # noqa: BLE001 - not cached: the record path says what it is, the next run asks again
                return None
            self.read_plans[key] = plan
        if plan is None:
            return None
        try:
            return self._read_fields(plan(payloads))
        except Exception:  # noqa: BLE001 - the record path decodes the run and says which record fails
            return None

    def _read_fields(self, columns: list[list]) -> list[list]:
        """Raw field columns read as the record path reads a decoded record's fields."""
        out = []
        for column, (_, read_field, path) in zip(columns, self.fields):
            if not set(map(type, column)) <= _PLAIN:
                column = list(map(plain, column))
            out.append([None if value is None else read_field(value, path) for value in column])
        return out

    # ---- writing ----------------------------------------------------------------------------------

    def write(self, columns: list[list]) -> list[bytes]:
        """The keys or values of rows given as columns; an EncodeError where one cannot be written
        (or where this path fails in any way: the caller writes the rows one by one)."""
        if not columns[0]:
            return []
        try:
            if self.write_plan is _UNSET:
                self.codec.write([column[0] for column in columns])  # the serializer takes a row of this writer
                sid, schema, _ = self.codec.writer()  # and its schema is the one runs write with
                self.write_plan = self._plan(lambda s, runs: self.fmt.writer(s, runs, sid), schema)
            if self.write_plan is None:
                return [self.codec.write(values) for values in zip(*columns)]
            return self.write_plan(columns)
        except Exception as error:  # noqa: BLE001 - fastavro's, jsonschema's and protobuf's own errors too
            raise EncodeError(f"{self.codec.side}: cannot encode ({type(error).__name__}: {error})") from None

    # ---- plans ------------------------------------------------------------------------------------

    def _schema(self, schema_id: int) -> Schema:
        return self.registry_client().get_schema(schema_id)

    def registry_client(self):
        if self.client is None:
            self.client = new_client(self.codec.registry)
        return self.client

    def _plan(self, make, schema: Schema):
        """`make(schema, self)`, or None for a schema runs do not take."""
        if schema.rule_set is not None or schema.references:
            return None
        return make(schema, self)
