"""Windowed keys as Kafka Streams writes them (ksqlDB WINDOW_TYPE sources and windowed results):
the key's bytes, then the window as 8-byte big-endian epoch millis: the start for TIME windows
(tumbling, hopping; the end is start + size), the end then the start for SESSION windows. A
decoded windowed key is the key tuple with the window's start and end appended."""

from __future__ import annotations

import struct

from streamjoin.serde.values import DecodeError

WINDOW_KINDS = ("TIME", "SESSION")
_LONG = struct.Struct(">q")


def window_kind(window_type: str) -> str:
    """TUMBLING and HOPPING keys carry TIME windows; SESSION keys SESSION windows."""
    return "SESSION" if window_type.upper() == "SESSION" else "TIME"


def split(data: bytes, kind: str, size_ms: int | None) -> tuple[bytes, int, int]:
    """(key bytes, window start, window end) of a windowed key."""
    width = 16 if kind == "SESSION" else 8
    if len(data) < width:
        raise DecodeError(f"key: a {kind} windowed key has at least {width} bytes, got {len(data)}")
    if kind == "SESSION":
        end, start = _LONG.unpack_from(data, len(data) - 16)[0], _LONG.unpack_from(data, len(data) - 8)[0]
        return data[:-16], start, end
    start = _LONG.unpack_from(data, len(data) - 8)[0]
    return data[:-8], start, start + (size_ms or 0)


def suffix(kind: str, start: int, end: int) -> bytes:
    """The bytes a windowed key ends with."""
    if kind == "SESSION":
        return _LONG.pack(end) + _LONG.pack(start)
    return _LONG.pack(start)
