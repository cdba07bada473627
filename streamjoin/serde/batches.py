"""Decoding and encoding a run of records at once, a column at a time.

The values are those `decode` and `encode_value` give record by record, from the same per-type
readers and writers; what goes is the interpreter's work around them (a call per record through
the generic paths, a loop per record over the fields). Only the common case takes the column
path: JSON object values or registry-format records and keys (serde.registry_runs: whole values
too, where a side is one column not wrapped in a record), no windowed key, no
columns from the record time or headers, no timestamp column (except where each record's time is
read from its decoded row, as `decode_all` does). Anything else, and any run with a record that does not decode cleanly (bad JSON, a field
spelled in another case, a value of the wrong type), is decoded record by record, so errors keep
their reasons.
"""

from __future__ import annotations

from functools import partial
from operator import is_not
from typing import Any, Mapping, Sequence

from streamjoin.serde.codecs import JSON_DECODER
from streamjoin.serde.values import ABSENT, EncodeError, hashable
from streamjoin.serde.formats import (DecodedRecord, DecodeError, SerdeSpec, _codec, _event_time, decode, encode_key,
                                      encode_value)

_scan = JSON_DECODER.scan_once  # what `load_json`'s raw_decode calls


def decode_all(spec: SerdeSpec, rows: Sequence[Any]) -> list[DecodedRecord | None]:
    """`decode` of each row (an `InputRow`); None for a row that does not decode (decoding it on
    its own says why)."""
    decoded = _together(spec, rows)
    if decoded is not None:
        return decoded
    out: list[DecodedRecord | None] = []
    for row in rows:
        try:
            out.append(decode(spec, row.key, row.value, row.ts, row.headers))
        except DecodeError:
            out.append(None)
    return out


class DecodedColumns:
    """A run of records decoded a column at a time: what `decode` gives each, column-wise. Never
    held by a runtime (so not part of the checkpoint format)."""

    __slots__ = ("keys", "names", "columns")

    def __init__(self, keys: list, names: list[str], columns: list[list]) -> None:
        self.keys = keys  # each record's key tuple, or None
        self.names = names  # the value columns, in the order of `columns`
        self.columns = columns  # one list of values per value column


def decode_columns(spec: SerdeSpec, keys: Sequence[bytes | None], values: Sequence[bytes | None],
                   event_times: bool = False) -> DecodedColumns | None:
    """Records given as their keys' and values' bytes, decoded column by column; None where this
    path does not apply to all of them (a null value among them: `decode_all` decodes a run's
    tombstones apart; a value that does not decode cleanly...) or the spec has a timestamp column, unless the caller reads each record's time
    from its decoded row (`event_times`)."""
    codec = _codec(spec)
    fields = codec.object_fields
    if (fields is None and codec.read_columns is None) or spec.window is not None or not codec.payload_is_value or \
            (spec.timestamp_column is not None and not event_times):
        return None
    columns = _json_columns(fields, values) if fields is not None else codec.read_columns(list(values))
    if columns is None:
        return None
    try:
        if not codec.key_reads:
            read = [None] * len(values)
        elif _text_key(spec):  # `read_key` of a KAFKA STRING key, without its three calls a key
            read = [None if key is None else (key.decode("utf-8"),) for key in keys]
        else:
            read = _registry_keys(codec, keys) if codec.read_key_columns is not None else None
            if read is None:
                read_key = codec.read_key
                read = [None if key is None else read_key(key) for key in keys]
    except (DecodeError, RecursionError, UnicodeDecodeError):
        return None
    return DecodedColumns(read, [name for name, _ in spec.payload_columns], columns)


def _registry_keys(codec, keys: Sequence[bytes | None]) -> list | None:
    """`read_key` of each key in a registry format, the present ones read as a run (None where
    the run is not taken: the caller reads each key on its own)."""
    present = [key for key in keys if key is not None]
    columns = codec.read_key_columns(present) if present else []
    if columns is None:
        return None
    key_of = codec.key_of
    read = [key_of(parts) for parts in zip(*columns)]
    if codec.nested_key:
        read = [None if key is None else tuple(map(hashable, key)) for key in read]
    taken = iter(read)
    return [None if key is None else next(taken) for key in keys]


def _json_columns(fields: list, values: Sequence[bytes | None]) -> list[list] | None:
    """JSON object values' columns (`fields`: the codec's `object_fields`), or None where one
    does not decode cleanly."""
    try:
        texts = [value.decode("utf-8") for value in values]  # a null value: AttributeError
        scanned = [_scan(text, 0) for text in texts]
    except (AttributeError, ValueError, StopIteration, RecursionError):
        return None
    if [end for _, end in scanned] != [len(text) for text in texts]:
        return None  # text after the value (`load_json` allows only whitespace; one by one says)
    objects = [value for value, _ in scanned]
    if set(map(type, objects)) != {dict}:
        return None
    columns = []
    try:
        for name, read_field, path in fields:
            column = [value.get(name, ABSENT) for value in objects]
            if ABSENT in column:  # (no JSON value equals it)
                return None  # absent, or spelled in another case: the record path matches names
            columns.append([None if field is None else read_field(field, path) for field in column])
    except (DecodeError, RecursionError):
        return None
    return columns


def _together(spec: SerdeSpec, rows: Sequence[Any]) -> list[DecodedRecord | None] | None:
    """The rows decoded column by column (`decode_columns`), as records; with a timestamp column,
    each timed by it, None for one whose time does not read (as `decode` refuses it)."""
    decoded = decode_columns(spec, [row.key for row in rows], [row.value for row in rows], event_times=True)
    if decoded is None:
        return _between_tombstones(spec, rows)
    names = decoded.names
    records = [DecodedRecord._make((key, dict(zip(names, values)), row.ts))
               for key, values, row in zip(decoded.keys, zip(*decoded.columns), rows)]
    return records if spec.timestamp_column is None else list(map(partial(_timed, spec, _codec(spec)), records))


def _between_tombstones(spec: SerdeSpec, rows: Sequence[Any]) -> list[DecodedRecord | None] | None:
    """`_together` of the rows with a value, and each tombstone among them (a table's deletion)
    decoded on its own; None where the run has no tombstone, or nothing else, or the other rows do
    not decode together. Asked only once a whole run failed to, so a run without tombstones pays
    nothing for it."""
    present = [row for row in rows if row.value is not None]
    records = _together(spec, present) if 0 < len(present) < len(rows) else None
    if records is None:
        return None
    taken = iter(records)
    return [next(taken) if row.value is not None else _tombstone(spec, row) for row in rows]


def _tombstone(spec: SerdeSpec, row: Any) -> DecodedRecord | None:
    try:
        return decode(spec, row.key, None, row.ts, row.headers)
    except DecodeError:
        return None


def _timed(spec: SerdeSpec, codec, record: DecodedRecord) -> DecodedRecord | None:
    try:
        return record._replace(ts=_event_time(spec, codec, record.key, record.value))
    except DecodeError:
        return None


def encode_keys(spec: SerdeSpec, keys: list) -> list[bytes | None]:
    """`encode_key` of each key; raises what the first key that cannot be encoded raises."""
    codec = _codec(spec)
    if spec.window is None and codec.write_key_columns is not None:
        return _registry_key_bytes(spec, codec, keys)
    if spec.window is None and len(spec.key_columns) == 1 and spec.key_format != "NONE" and _one_part_keys(keys):
        write_key = codec.write_key
        if _text_key(spec):  # a str written inline (`write_key` of a KAFKA STRING key, without its calls)
            return [None if key is None or (part := key[0]) is None else part.encode("utf-8") if type(part) is str
                    else write_key(key) for key in keys]
        return [None if key is None or key[0] is None else write_key(key) for key in keys]
    return [encode_key(spec, key) for key in keys]


def _registry_key_bytes(spec: SerdeSpec, codec, keys: list) -> list[bytes | None]:
    """`encode_key` of each key in a registry format, the keys with a part written as a run (one
    by one where the run cannot write them, so the first that cannot be says why)."""
    size = len(spec.key_columns)
    present = [at for at, key in enumerate(keys) if key is not None]
    parts = [keys[at] for at in present]
    if set(map(type, parts)) <= {tuple} and set(map(len, parts)) <= {size}:
        written = [at for at, key in zip(present, parts) if codec.key_of(key) is not None]
        try:
            encoded = codec.write_key_columns([list(c) for c in zip(*(keys[at] for at in written))] or [[]] * size)
        except EncodeError:
            pass
        else:
            out: list[bytes | None] = [None] * len(keys)
            for at, data in zip(written, encoded):
                out[at] = data
            return out
    return [encode_key(spec, key) for key in keys]


def _one_part_keys(keys: list) -> bool:
    """Whether every key is None or a tuple of one part (checked without a call per key)."""
    present = list(filter(_is_present, keys))
    return set(map(type, present)) <= {tuple} and set(map(len, present)) <= {1}


_is_present = partial(is_not, None)


def _text_key(spec: SerdeSpec) -> bool:
    return spec.key_format == "KAFKA" and len(spec.key_columns) == 1 and spec.key_columns[0][1].name == "STRING"


def encode_values(spec: SerdeSpec, rows: list[Mapping[str, Any]]) -> list[bytes | None]:
    """`encode_value` of each row; raises what the first row that cannot be encoded raises, or
    a KeyError for a missing column (encode those rows one by one for the message)."""
    if not encodes_value_columns(spec):
        return [encode_value(spec, row) for row in rows]
    return encode_value_columns(spec, [[row[name] for row in rows] for name, _ in spec.payload_columns])


def encodes_value_columns(spec: SerdeSpec) -> bool:
    """Whether `encode_value_columns` writes `spec`'s values (JSON objects of its columns, or
    records of a registry format)."""
    return _codec(spec).write_columns is not None


def encode_value_columns(spec: SerdeSpec, columns: list[list[Any]]) -> list[bytes]:
    """The values of rows given a column at a time (one list per payload column, in order), where
    `encodes_value_columns(spec)`. Raises what `encode_values` raises, or an EncodeError."""
    return _codec(spec).write_columns(columns)
