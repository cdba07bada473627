"""Record formats as ksqlDB defines them: decode Kafka key/value bytes into typed rows and back.

Key formats: KAFKA (one primitive column with the standard Kafka serializers: STRING UTF-8,
INT 4-byte and BIGINT 8-byte big-endian two's complement, DOUBLE 8-byte IEEE big-endian, BYTES
raw), JSON (a bare JSON value for one key column, an object for several), DELIMITED (one text
line, columns in order) and NONE (the key is not read). Value formats: JSON (an object by column
name, matched case-insensitively, missing = NULL; `wrap_single_value=False` reads/writes a bare
value for a single column), DELIMITED (comma-separated by default, columns in declared order,
empty field = NULL) and KAFKA (one primitive column). A null value (no bytes) is a tombstone on a
table and a null-value record on a stream: it decodes to `value=None`, never an error.

Columns that are not read from the payload: `... PROCTIME` columns (the engine computes them on
arrival; they are absent from the decoded value), `record_ts_columns` (Flink
`METADATA FROM 'timestamp' VIRTUAL`: filled from the record timestamp) and `header_columns`
(ksqlDB `HEADERS`: every header as a {KEY, VALUE} struct, in record order, never NULL;
`HEADER('k')`: the bytes of the last header named k, NULL when there is none).
Value types: see `streamjoin.serde.values`; docs/formats.md has the full table.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any, Callable, Mapping, NamedTuple, Sequence

from streamjoin.serde import windowed
from streamjoin.serde.changelog import ChangeReader
from streamjoin.serde.codecs import Columns, delimited_codec, kafka_codec, load_json
from streamjoin.serde.headers import Headers, header_map, header_value, struct_names
from streamjoin.serde.java_time import parse_millis
from streamjoin.serde.windowed import WINDOW_KINDS
from streamjoin.serde.time import datetime_to_millis, millis_to_datetime
from streamjoin.serde.values import (
    DecodeError,
    EncodeError,
    field_readers,
    hashable,
    json_reader,
    json_writer,
    struct_reader,
    struct_columns_writer,
    struct_writer,
)
from streamjoin.serde.registry_codecs import Registry, configured, registry_codec
from streamjoin.serde.registry_runs import side_runs
from streamjoin.dialect.formats import (
    CHANGELOG_FORMATS,
    READ_METADATA,
    REGISTRY_FORMATS,
    SCHEMA_FORMATS,
    SchemaRefs,
    FormatError,
    event_time_problem,
    format_problem,
    header_problem,
    metadata_problem,
)
from streamjoin.dialect.types import SqlType, parse_type

__all__ = ["SerdeSpec", "DecodedRecord", "DecodeError", "EncodeError", "decode", "encode_key", "encode_value"]

_DELIMITER_NAMES = {"SPACE": " ", "TAB": "\t"}


@dataclass(frozen=True)
class SerdeSpec:
    """How one topic's records are laid out. Hashable: decoders are built once per spec.

    `key_columns` / `value_columns` are (name, type) in declared order; names are kept as given
    (ksqlDB upper-cases unquoted identifiers before they get here). `timestamp_column` names the
    event-time column (TIMESTAMP, or BIGINT epoch millis) or is None for the record timestamp.
    """

    key_format: str
    key_columns: Columns
    value_format: str
    value_columns: Columns
    timestamp_column: str | None = None
    record_ts_columns: tuple[str, ...] = ()
    wrap_single_value: bool = True
    delimiter: str = ","
    timestamp_format: str | None = None  # the timestamp column is STRING text in this Java pattern (UTC)
    # A windowed key (TIME or SESSION, see serde.windowed): decoded key tuples end with the
    # window's start and end; window_size_ms gives a TIME window's end.
    window: str | None = None
    window_size_ms: int | None = None
    # (value column, header key or None for every header): filled from the record's headers
    header_columns: tuple[tuple[str, str | None], ...] = ()
    # (value column, metadata key) of Flink's METADATA columns other than the record timestamp:
    # a changelog format's envelope fields (serde.changelog), the record's headers, and where it
    # was read (READ_METADATA: filled by the task, `read_metadata`)
    metadata_columns: tuple[tuple[str, str], ...] = ()
    wrap_single_key: bool = False  # a JSON key of one column is an object of it (Flink's rows), not the bare value
    # The registry formats (serde.registry_codecs): the topic (its subjects are <topic>-key and
    # <topic>-value), the declaration's schema ids and names, the registry (default: the one this
    # process configured), and whether a writer registers its columns' schema first (a sink's).
    topic: str | None = None
    schemas: SchemaRefs = SchemaRefs()
    registry: Registry | None = None
    register_schemas: bool = False

    def __post_init__(self) -> None:
        if self.registry is None and {self.key_format.upper(), self.value_format.upper()} & set(REGISTRY_FORMATS):
            own = self.schemas.registry_url  # the declaration's own registry (Flink's 'avro-confluent.url')
            object.__setattr__(self, "registry", Registry(own, self.schemas.registry_auth) if own else configured())
        object.__setattr__(self, "key_format", self.key_format.upper())
        object.__setattr__(self, "value_format", self.value_format.upper())
        object.__setattr__(self, "delimiter", _DELIMITER_NAMES.get(self.delimiter.upper(), self.delimiter))
        if self.window is not None and self.window not in WINDOW_KINDS:
            raise ValueError(f"unknown window kind {self.window!r}; supported: {', '.join(WINDOW_KINDS)}")
        value_types = dict(self.value_columns)
        for name, key in self.header_columns:
            problem = f"header column {name!r} is not a value column" if name not in value_types else \
                header_problem(name, key, value_types[name])
            if problem:
                raise ValueError(problem)
        value_types = dict(self.value_columns)
        for name, key in self.metadata_columns:
            problem = metadata_problem(self.value_format, key, value_types[name]) if name in value_types else \
                f"metadata column {name!r} is not a value column"
            if problem:
                raise ValueError(problem)
        if len(self.delimiter) != 1:
            raise ValueError(f"a DELIMITED delimiter is one character (or SPACE, TAB), not {self.delimiter!r}")
        for side, fmt, columns in (("key", self.key_format, self.key_columns),
                                   ("value", self.value_format, self.payload_columns)):
            problem = self._changelog_problem() if fmt in CHANGELOG_FORMATS else format_problem(side, fmt, columns)
            if problem:
                raise FormatError(problem, side)
        if self.timestamp_column is not None:
            ts_type = dict(self.key_columns + self.value_columns).get(self.timestamp_column)
            if ts_type is None:
                raise ValueError(f"timestamp column {self.timestamp_column!r} is not a column")
            problem = event_time_problem(self.timestamp_column, ts_type, self.timestamp_format)
            if problem:
                raise ValueError(problem)

    def _changelog_problem(self) -> str | None:
        """A changelog's key is its row's key columns, read from the value's envelope."""
        if self.key_format != self.value_format:
            return (f"a {self.value_format} changelog's key is read from its value: the key format is "
                    f"{self.value_format} too, not {self.key_format}")
        if not self.key_columns:
            return f"a {self.value_format} changelog changes keyed rows: it needs key columns"
        return None

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "_codec"}  # closures: rebuilt on use

    @classmethod
    def of(cls, columns: Mapping[str, str | SqlType], key: Sequence[str] = (), *, key_format: str = "KAFKA",
           value_format: str = "JSON", timestamp: str | None = None, **options: Any) -> "SerdeSpec":
        """Build from a catalog-style description: every column (key ones included) -> type string,
        as in the conformance `sources[]` entries."""
        typed = {name: parse_type(t) if isinstance(t, str) else t for name, t in columns.items()}
        missing = [k for k in key if k not in typed]
        if missing:
            raise ValueError(f"key columns {missing} are not among the columns {list(typed)}")
        return cls(
            key_format=key_format,
            key_columns=tuple((k, typed[k]) for k in key),
            value_format=value_format,
            value_columns=tuple((n, t) for n, t in typed.items() if n not in key),
            timestamp_column=timestamp, **options,
        )

    @cached_property
    def payload_columns(self) -> Columns:
        """The value columns that are in the record bytes (not PROCTIME, not from the record ts or
        its headers)."""
        elsewhere = set(self.record_ts_columns) | {n for n, _ in self.header_columns + self.metadata_columns}
        return tuple((n, t) for n, t in self.value_columns if not t.proctime and n not in elsewhere)

    @cached_property
    def read_metadata(self) -> tuple[tuple[str, str], ...]:
        """(column, key) of the metadata columns filled where the record is read (its topic,
        partition, offset): not decoded, see `streamjoin.runtime.records.input_row`."""
        return tuple((name, key) for name, key in self.metadata_columns if key in READ_METADATA)

    @cached_property
    def key_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.key_columns)

    @property
    def decoded_columns(self) -> Columns:
        """Every column `decode` produces: key columns, then value columns minus PROCTIME ones."""
        return self.key_columns + tuple((n, t) for n, t in self.value_columns if not t.proctime)


class DecodedRecord(NamedTuple):
    key: tuple | None  # one entry per key column (then a windowed key's start, end); None: no key
    value: dict[str, Any] | None  # value columns; None for a tombstone / null-value record
    ts: int  # event time, epoch milliseconds


# ---- codecs -------------------------------------------------------------------------------------

class _Codec:
    """The compiled readers/writers of one SerdeSpec, built once (see `_codec`).

    read_key(bytes) -> tuple | None; read_value(bytes) -> {payload column: value} | None;
    write_key / write_value take the values in column order.
    """

    def __init__(self, spec: SerdeSpec) -> None:
        self.spec = spec
        read_key, self.write_key = self._side(spec.key_format, spec.key_columns, "key",
                                              bare_single=not spec.wrap_single_key)
        key_names = [n for n, _ in spec.key_columns]
        bare = ("KAFKA",) if spec.wrap_single_key else ("KAFKA", "JSON")
        if len(key_names) == 1 and spec.key_format in bare:  # the bare value, no row dict
            read_part = self._bare(spec.key_format, spec.key_columns[0], "key")[0]

            def read_key_tuple(data: bytes) -> tuple | None:
                part = read_part(data)
                return None if part is None else (part,)
        else:
            def read_key_tuple(data: bytes) -> tuple | None:
                row = read_key(data)
                # JSON `null`, or no part: a null key
                return None if row is None else self.key_of(tuple(row[n] for n in key_names))
        # ARRAY, MAP, STRUCT keys: stores hash them
        self.nested_key = any(t.is_nested or t.name == "ANY" for _, t in spec.key_columns)
        if self.nested_key:
            def read_nested_key(data: bytes, read=read_key_tuple) -> tuple | None:
                key = read(data)
                return None if key is None else tuple(hashable(part) for part in key)
            self.read_key = read_nested_key
        else:
            self.read_key = read_key_tuple
        self.read_value, self.write_value = self._side(
            spec.value_format, spec.payload_columns, "value", bare_single=not spec.wrap_single_value)
        self.write_row = self._row_writer(spec)
        # Runs of records a column at a time (`streamjoin.serde.batches`): a JSON object value's
        # fields' readers (None for every other value format), and the value side's readers and
        # writers of columns (`_columns`).
        self.object_fields = field_readers(spec.payload_columns, "value") if self.value_is_object(spec) else None
        self.read_columns, self.write_columns = self._columns(spec)
        # A registry format's key side a run at a time: its key columns from keys' bytes, and back.
        self.read_key_columns, self.write_key_columns = side_runs(getattr(read_key, "__self__", None)) or (None, None)
        # Where each value column comes from, and whether any is not read from the payload (else
        # the payload dict is the value as is): (name, source), source one of _PAYLOAD,
        # _TS_TIMESTAMP, _TS_MILLIS, or (_HEADER, key, struct field names) with key None (and
        # the HEADERS struct's field names) for every header.
        headers, metadata = dict(spec.header_columns), dict(spec.metadata_columns)
        self.value_fill = [(n, (_HEADER, headers[n], struct_names(t) if headers[n] is None else None)
                            if n in headers else
                            (_TS_TIMESTAMP if t.is_timestamp else _TS_MILLIS) if n in spec.record_ts_columns
                            else _HEADER_MAP if metadata.get(n) == "headers"
                            else _PAYLOAD) for n, t in spec.value_columns
                           if not t.proctime and metadata.get(n) not in READ_METADATA]
        self.payload_is_value = len(spec.payload_columns) == len(self.value_fill)
        self.change = ChangeReader(spec) if spec.value_format in CHANGELOG_FORMATS else None
        self.key_reads = bool(spec.key_columns) and spec.key_format != "NONE" and self.change is None
        self.ts_in_key = spec.timestamp_column is not None and spec.timestamp_column in key_names
        self.ts_key_index = key_names.index(spec.timestamp_column) if self.ts_in_key else -1

    @staticmethod
    def key_of(parts: tuple) -> tuple | None:
        """A key tuple from its parts as read (not yet made hashable): None where no part is."""
        for part in parts:
            if part is not None:
                return parts
        return None

    def _row_writer(self, spec: SerdeSpec) -> Callable[[Mapping[str, Any]], bytes | None]:
        """Value bytes straight from a row mapping: a JSON object is written from the row as it
        is (the hot path: no list of values, no dict rebuilt from it)."""
        columns = spec.payload_columns
        names = [n for n, _ in columns]
        if self.value_is_object(spec):
            write_object = struct_writer(columns, what="value column")
            return lambda row: write_object(row).encode("utf-8")

        def write(row: Mapping[str, Any]) -> bytes | None:
            try:
                values = [row[name] for name in names]
            except KeyError as e:
                raise EncodeError(f"row has no value column {e.args[0]!r}; it has {sorted(row)}") from None
            return self.write_value(values)
        return write

    def _columns(self, spec: SerdeSpec) -> tuple[Callable | None, Callable | None]:
        """(values -> payload columns or None, payload columns -> values) for runs of values: a
        registry format's runs (serde.registry_runs) both ways, JSON objects' writer (their reader
        is `object_fields`); None for every other format."""
        if self.value_is_object(spec):
            return None, _utf8_writer(struct_columns_writer(spec.payload_columns))
        if not spec.payload_columns:
            return None, None
        return side_runs(getattr(self.read_value, "__self__", None)) or (None, None)

    @staticmethod
    def value_is_object(spec: SerdeSpec) -> bool:
        """Whether a value is a JSON object of the payload columns (not a bare value)."""
        columns = spec.payload_columns
        return spec.value_format == "JSON" and bool(columns) and (spec.wrap_single_value or len(columns) > 1)

    def _side(self, fmt: str, columns: Columns, side: str, bare_single: bool):
        """(bytes -> {column: value}, [values in column order] -> bytes) for one side."""
        names = [n for n, _ in columns]
        if not columns or fmt == "NONE":
            return (lambda data: {}), (lambda values: None)
        if fmt in SCHEMA_FORMATS:
            spec, refs = self.spec, self.spec.schemas
            return registry_codec(fmt, columns, side, bare_single and len(columns) == 1, spec.topic, spec.registry,
                                  refs.key_id if side == "key" else refs.value_id,
                                  refs.key_name if side == "key" else refs.value_name, spec.register_schemas)
        if fmt == "DELIMITED":
            return delimited_codec(columns, self.spec.delimiter, side)
        if fmt == "KAFKA" or (fmt == "JSON" and bare_single and len(columns) == 1):
            name = columns[0][0]
            read_one, write_one = self._bare(fmt, columns[0], side)
            return (lambda data: {name: read_one(data)}), (lambda values: write_one(values[0]))
        read_object, write_object = struct_reader(columns, path=side), struct_writer(columns)

        def read(data: bytes) -> dict | None:
            payload = load_json(data, side)
            # JSON `null` is a null value, like no bytes at all.
            return None if payload is None else read_object(payload, side)

        def write(values: Sequence[Any]) -> bytes:
            return write_object(dict(zip(names, values))).encode("utf-8")
        return read, write

    @staticmethod
    def _bare(fmt: str, column: tuple[str, SqlType], side: str):
        """(bytes -> value, value -> bytes) for a side that is one bare column: KAFKA, or JSON
        without the object around it."""
        name, t = column
        path = f"{side}.{name}"
        if fmt == "KAFKA":
            read_kafka, write_kafka = kafka_codec(t)
            return (lambda data: read_kafka(data, path)), write_kafka
        read_json, write_json = json_reader(t), json_writer(t)
        return (lambda data: read_json(load_json(data, side), path)), (lambda value: write_json(value).encode("utf-8"))


_PAYLOAD, _TS_TIMESTAMP, _TS_MILLIS, _HEADER, _HEADER_MAP = "payload", "ts_timestamp", "ts_millis", "header", "headers"


def _utf8_writer(write_texts: Callable[[list[list]], list[str]]) -> Callable[[list[list]], list[bytes]]:
    return lambda columns: [text.encode("utf-8") for text in write_texts(columns)]


def _codec(spec: SerdeSpec) -> _Codec:
    # Kept on the spec itself: hashing a spec for a cache lookup costs more than decoding a field.
    codec = spec.__dict__.get("_codec")
    if codec is None:
        codec = _Codec(spec)
        object.__setattr__(spec, "_codec", codec)
    return codec


# ---- public API ---------------------------------------------------------------------------------

def decode(spec: SerdeSpec, key_bytes: bytes | None, value_bytes: bytes | None, record_ts: int,
           headers: Headers = ()) -> DecodedRecord:
    """Decode one Kafka record (with its headers, in record order); raise DecodeError(reason)
    when it does not fit `spec`."""
    try:
        codec = _codec(spec)
        if codec.change is not None:
            return _decoded_change(spec, codec, value_bytes, record_ts, headers)
        window = ()
        if key_bytes is not None and spec.window is not None:
            key_bytes, *window = windowed.split(key_bytes, spec.window, spec.window_size_ms)
        key = codec.read_key(key_bytes) if key_bytes is not None and codec.key_reads else None
        if key is not None and window:
            key += tuple(window)
        value = None if value_bytes is None else codec.read_value(value_bytes)
        if value is not None and not codec.payload_is_value:
            value = _filled(codec, value, record_ts, headers)
        # A tombstone carries no columns: its record time counts.
        if spec.timestamp_column is None or value is None:
            return DecodedRecord._make((key, value, record_ts))  # (_make: no argument handling, faster)
        return DecodedRecord._make((key, value, _event_time(spec, codec, key, value)))
    except RecursionError:  # a value nested thousands deep: a bad record, never a failed query
        raise DecodeError("nested too deeply to decode") from None


def _decoded_change(spec: SerdeSpec, codec: _Codec, value_bytes: bytes | None, record_ts: int,
                    headers: Headers) -> DecodedRecord:
    """A changelog record: its key's new row, or a deletion of its key (with the deleted row's
    event time). A null value changes nothing (Debezium writes one after a delete, for compaction)."""
    if value_bytes is None:
        return DecodedRecord(None, None, record_ts)
    key, payload, deleted = codec.change(value_bytes)
    value = payload if codec.payload_is_value else _filled(codec, payload, record_ts, headers)
    ts = record_ts if spec.timestamp_column is None else _event_time(spec, codec, key, value)
    return DecodedRecord(key, None if deleted else value, ts)


def _filled(codec: _Codec, payload: dict, record_ts: int, headers: Headers) -> dict:
    """The value columns from the payload, the record time and the headers."""
    value = {}
    for name, source in codec.value_fill:
        if source is _PAYLOAD:
            value[name] = payload[name]
        elif source is _TS_TIMESTAMP:
            value[name] = millis_to_datetime(record_ts)
        elif source is _TS_MILLIS:
            value[name] = record_ts
        elif source is _HEADER_MAP:
            value[name] = header_map(headers)
        else:
            value[name] = header_value(headers, source[1], source[2])
    return value


def _event_time(spec: SerdeSpec, codec: _Codec, key: tuple | None, value: dict) -> int:
    """The time in the timestamp column of a record with a value."""
    column = spec.timestamp_column
    if codec.ts_in_key:
        ts = None if key is None else key[codec.ts_key_index]
    else:
        ts = value[column]
    if ts is None:
        raise DecodeError(f"timestamp column {column} is NULL")
    if spec.timestamp_format is not None:
        try:
            return parse_millis(ts, spec.timestamp_format)
        except ValueError as error:
            raise DecodeError(f"timestamp column {column}: {error}") from None
    return datetime_to_millis(ts) if isinstance(ts, datetime) else int(ts)


def encode_key(spec: SerdeSpec, key: tuple | Any | None) -> bytes | None:
    """Serialize a key tuple (a bare value is accepted for one key column); None -> no key."""
    if key is None or not spec.key_columns or spec.key_format == "NONE":
        return None
    values = tuple(key) if isinstance(key, (tuple, list)) else (key,)
    window = values[len(spec.key_columns):] if spec.window is not None else ()
    values = values[:len(spec.key_columns)] if window else values
    if len(values) != len(spec.key_columns) or (spec.window is not None and len(window) != 2):
        expected = [n for n, _ in spec.key_columns] + (["window start", "window end"] if spec.window else [])
        raise EncodeError(f"key {key!r} has {len(values) + len(window)} parts; the key is {expected}")
    for v in values:
        if v is not None:
            break
    else:  # no part: no key
        return None
    written = _written("key", _codec(spec).write_key, values)
    return written + windowed.suffix(spec.window, *window) if window else written


def encode_value(spec: SerdeSpec, row: Mapping[str, Any] | None) -> bytes | None:
    """Serialize the value columns of `row` (a mapping by column name); None -> tombstone."""
    if row is None:
        return None
    try:
        return _codec(spec).write_row(row)
    except EncodeError as e:
        raise EncodeError(f"value: {e}") from None
    except (TypeError, ValueError, ArithmeticError, struct.error, RecursionError) as e:
        raise EncodeError(f"value: cannot encode ({type(e).__name__}: {e})") from None


def _written(side: str, write: Callable[[Any], bytes], values: Any) -> bytes:
    """`write(values)`, any failure as an EncodeError naming the side: a value of the wrong kind
    for its column (a string where a number goes, an integer past the KAFKA format's width) is a
    bad row for the dead letters, not a failed query."""
    try:
        return write(values)
    except EncodeError as e:
        raise EncodeError(f"{side}: {e}") from None
    except (TypeError, ValueError, ArithmeticError, struct.error, RecursionError) as e:
        raise EncodeError(f"{side}: cannot encode ({type(e).__name__}: {e})") from None
