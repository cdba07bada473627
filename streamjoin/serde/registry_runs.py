"""Runs of registry-encoded values (AVRO, PROTOBUF, JSON_SR) decoded and encoded together.

The record path (serde.registry_codecs) calls a confluent-kafka serializer once per record, and
most of such a call is bookkeeping around the format's own reader or writer: the subject's name,
the schema's caches, a look for data-contract rules, the framing. A run does that bookkeeping once
per schema id, then calls what the serializers call, record by record: the library's framing,
fastavro's schemaless reader and writer, the protobuf message's parser and serializer, the JSON
parser, the schema's validator and the JSON writer. Columns are read and shaped a column at a
time (serde.batches). The first record of each schema id goes through the serializer itself,
so the run takes a schema id only once the record path has accepted it.

A run is not taken where it could differ from the record path: a schema with rules or
references, a value framed with a schema GUID, a record that does not decode or validate, a
JSON field spelled in another case than its column, a PROTOBUF message field or repeated field
among the columns. The record path then decodes each record, and says why one fails.
"""

from __future__ import annotations

import io
from typing import Any, Callable, Sequence

from confluent_kafka.schema_registry import Schema, prefix_schema_id_deserializer
from confluent_kafka.schema_registry.common.serde import SchemaId

from streamjoin.dialect.types import SqlType
from streamjoin.serde.registry_codecs import Registry, new_client, subject, subject_message_class, writer_schema
from streamjoin.serde.registry_formats import FORMATS, RunFormat
from streamjoin.serde.registry_values import plain
from streamjoin.serde.values import EncodeError, field_readers

Columns = Sequence[tuple[str, SqlType]]
ReadRun = Callable[[list[bytes]], "list[list] | None"]
WriteRun = Callable[[list[list]], list[bytes]]

_UNSET = object()
_PLAIN = frozenset((int, float, str, bool, type(None)))  # values `plain` returns as they are


def value_runs(fmt: str, columns: Columns, topic: str | None, registry: Registry | None, schema_id: int | None,
               full_name: str | None, register: bool, read_one: Callable[[bytes], Any],
               write_one: Callable[[Sequence[Any]], bytes]) -> tuple[ReadRun, WriteRun] | None:
    """(read a run of values into payload columns or None, write payload columns) for a value side
    of `columns` in registry format `fmt`; None where runs do not apply (one bare value, another
    format). `read_one` / `write_one` are the record path's."""
    if fmt not in FORMATS or registry is None:
        return None
    runs = ValueRuns(FORMATS[fmt], columns, topic or "", registry, (schema_id, full_name, register), read_one,
                     write_one)
    return runs.read, runs.write


class ValueRuns:
    """One value side's runs: plans per schema id (reading) and for the writer's schema (writing),
    each made on first use, in the task."""

    def __init__(self, fmt: RunFormat, columns: Columns, topic: str, registry: Registry,
                 writer: tuple[int | None, str | None, bool], read_one, write_one) -> None:
        self.fmt, self.columns, self.topic, self.registry, self.writer = fmt, tuple(columns), topic, registry, writer
        self.read_one, self.write_one = read_one, write_one
        self.fields = field_readers(self.columns, "value")
        self.read_plans: dict[tuple, Any] = {}
        self.write_plan: Any = _UNSET
        self.client = None

    # ---- reading ----------------------------------------------------------------------------------

    def read(self, datas: list[bytes]) -> list[list] | None:
        """The payload columns of a run of values, or None where the record path decodes them
        (a value framed with a schema GUID has no id: the registry is asked for None, and fails)."""
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
        schema_id = SchemaId(self.fmt.schema_type)
        payload = prefix_schema_id_deserializer(data, None, schema_id)
        return (schema_id.id, tuple(schema_id.message_indexes or ())), payload

    def _group(self, key: tuple, payloads: list[io.BytesIO], first: bytes) -> list[list] | None:
        plan = self.read_plans.get(key, _UNSET)
        if plan is _UNSET:
            try:
                self.read_one(first)  # the serializer takes this schema id (and message indexes)
            except Exception:  # noqa: BLE001 - whatever it is, the record path says it
                return None  # not cached: the next run asks again
            plan = self.read_plans[key] = self._plan(self.fmt.reader, self._schema(key[0]))
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
        """The values of rows given as payload columns (raises what the record path raises, or an
        EncodeError, for a row that cannot be written)."""
        if self.write_plan is _UNSET and columns and columns[0]:
            self.write_one([column[0] for column in columns])  # the serializer takes the writer's schema
            schema_id, full_name, register = self.writer
            sid, schema = writer_schema(self.registry, subject(self.topic, "value"), self.fmt.name, self.columns,
                                        False, schema_id, register)
            self.write_plan = self._plan(lambda s, runs: self.fmt.writer(s, runs, sid), schema)
        if self.write_plan in (None, _UNSET):
            return [self.write_one(values) for values in zip(*columns)]
        try:
            return self.write_plan(columns)
        except (EncodeError, TypeError, ValueError, ArithmeticError):
            raise
        except Exception as error:  # noqa: BLE001 - fastavro's and jsonschema's own errors
            raise EncodeError(f"cannot encode ({type(error).__name__}: {error})") from None

    # ---- plans ------------------------------------------------------------------------------------

    def _schema(self, schema_id: int) -> Schema:
        if self.client is None:
            self.client = new_client(self.registry)
        return self.client.get_schema(schema_id)

    def _plan(self, make, schema: Schema):
        """`make(schema, self)`, or None for a schema runs do not take."""
        if schema.rule_set is not None or schema.references:
            return None
        if self.client is None:
            self.client = new_client(self.registry)
        return make(schema, self)

    def message_class(self):
        """The PROTOBUF message class the record path's deserializer parses with."""
        return subject_message_class(self.registry, self.topic, "value", self.writer[1])
