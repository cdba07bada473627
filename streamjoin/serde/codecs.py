"""Per-format readers and writers of one side of a record (streamjoin.serde.formats composes them
per SerdeSpec): the KAFKA format's primitives, DELIMITED lines and JSON text."""

from __future__ import annotations

import csv
import io
import json
import struct
from decimal import Decimal
from typing import Any, Callable, Sequence

from streamjoin.dialect.types import SqlType
from streamjoin.serde.values import DecodeError, checked_integer, text_reader, text_writer

Columns = tuple[tuple[str, SqlType], ...]
KAFKA_PRIMITIVES = {"INT": struct.Struct(">i"), "BIGINT": struct.Struct(">q"), "DOUBLE": struct.Struct(">d")}


def kafka_codec(t: SqlType) -> tuple[Callable[[bytes, str], Any], Callable[[Any], bytes]]:
    if t.name == "STRING":
        def read_text(data: bytes, path: str) -> str:
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError as e:
                raise DecodeError(f"{path}: not UTF-8 ({e.reason} at byte {e.start})") from None
        return read_text, lambda v: str(v).encode("utf-8")
    if t.name == "BYTES":
        return lambda data, path: data, bytes
    packer = KAFKA_PRIMITIVES[t.name]

    def read_number(data: bytes, path: str) -> Any:
        if len(data) != packer.size:
            raise DecodeError(f"{path}: {t} in the KAFKA format is {packer.size} bytes, got {len(data)}")
        return packer.unpack(data)[0]
    return read_number, lambda v: packer.pack(float(v) if t.name == "DOUBLE" else checked_integer(t, v))


def delimited_codec(columns: Columns, delimiter: str, side: str):
    readers = [(name, text_reader(t)) for name, t in columns]
    writers = [text_writer(t) for _, t in columns]

    def read(data: bytes) -> dict:
        line = utf8(data, side)
        fields = next(csv.reader([line], delimiter=delimiter), [])
        if len(fields) != len(readers):
            raise DecodeError(f"{side}: expected {len(readers)} DELIMITED fields, got {len(fields)}")
        return {name: None if text == "" else read_field(text, f"{side}.{name}")
                for (name, read_field), text in zip(readers, fields)}

    def write(values: Sequence[Any]) -> bytes:
        out = io.StringIO()
        csv.writer(out, delimiter=delimiter, lineterminator="").writerow(
            "" if v is None else w(v) for w, v in zip(writers, values))
        return out.getvalue().encode("utf-8")
    return read, write


def utf8(data: bytes, side: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DecodeError(f"{side}: not UTF-8 ({e.reason} at byte {e.start})") from None


JSON_DECODER = json.JSONDecoder(parse_float=Decimal)  # one decoder: json.loads(parse_float=...) builds one per call


def load_json(data: bytes, side: str) -> Any:
    try:
        text = data.decode("utf-8")
        try:  # raw_decode skips the whitespace regexes of decode(); fall back for padded text
            value, end = JSON_DECODER.raw_decode(text)
            if end == len(text):
                return value
        except ValueError:
            pass
        return JSON_DECODER.decode(text)
    except (ValueError, UnicodeDecodeError) as e:
        raise DecodeError(f"{side}: not valid JSON ({e})") from None
