"""Windowed keys (ksqlDB WINDOW_TYPE): Kafka Streams' layouts, decoded as the key tuple followed by
the window's start and end, and written back byte for byte."""

from __future__ import annotations

import struct

import pytest

from streamjoin.serde.formats import DecodeError, EncodeError, SerdeSpec, decode, encode_key

LONG = struct.Struct(">q")
KEY = struct.pack(">i", 7)  # INT 7 in the KAFKA format

CASES = [
    # TIME windows (tumbling, hopping): the key, then the start; the end is start + size
    ("TIME", 1000, KEY + LONG.pack(5000), (7, 5000, 6000)),
    # SESSION windows: the key, then the end, then the start
    ("SESSION", None, KEY + LONG.pack(765) + LONG.pack(234), (7, 234, 765)),
]


@pytest.mark.parametrize("kind, size, data, key", CASES, ids=[c[0] for c in CASES])
def test_windowed_key_round_trip(kind, size, data, key):
    spec = SerdeSpec.of({"k": "INT", "v": "INT"}, ["k"], window=kind, window_size_ms=size)
    assert decode(spec, data, b'{"v":1}', 0).key == key
    assert encode_key(spec, key) == data


def test_windowed_key_errors():
    spec = SerdeSpec.of({"k": "INT"}, ["k"], window="SESSION")
    with pytest.raises(DecodeError, match="at least 16 bytes"):
        decode(spec, KEY, None, 0)
    with pytest.raises(EncodeError, match="window start"):
        encode_key(spec, (7,))
    with pytest.raises(ValueError, match="unknown window kind"):
        SerdeSpec.of({"k": "INT"}, ["k"], window="SLIDING")
