"""Columns read from record headers (streamjoin.serde.headers through `decode`): a `Case` per rule,
the record's headers in, the decoded header columns out."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.dialect.formats import header_problem
from streamjoin.dialect.types import SqlType
from streamjoin.serde.formats import SerdeSpec, decode, encode_value

HEADERS = "ARRAY<STRUCT<KEY STRING, VALUE BYTES>>"
# K INT KEY, V INT, ONE BYTES HEADER('a'), ALL HEADERS
SPEC = SerdeSpec.of({"K": "INT", "V": "INT", "ONE": "BYTES", "ALL": HEADERS}, ["K"],
                    header_columns=(("ONE", "a"), ("ALL", None)))


@dataclass(frozen=True)
class Case:
    headers: tuple
    one: bytes | None
    all: list


CASES = {
    "no headers: HEADER('a') is NULL, HEADERS an empty array": Case((), None, []),
    "the header's bytes": Case((("a", b"!"),), b"!", [{"KEY": "a", "VALUE": b"!"}]),
    "a repeated key: the last one": Case((("a", b"1"), ("b", b"x"), ("a", b"2")), b"2",
                                         [{"KEY": "a", "VALUE": b"1"}, {"KEY": "b", "VALUE": b"x"},
                                          {"KEY": "a", "VALUE": b"2"}]),
    "a header without a value is NULL": Case((("a", None),), None, [{"KEY": "a", "VALUE": None}]),
    "keys are case-sensitive": Case((("A", b"!"),), None, [{"KEY": "A", "VALUE": b"!"}]),
}


@pytest.mark.parametrize("name", CASES)
def test_header_columns(name):
    case = CASES[name]
    record = decode(SPEC, b"\0\0\0\1", b'{"V": 7, "ONE": "ignored", "ALL": []}', 5, case.headers)
    # what the payload says of a header column is not read: the headers are
    assert record.value == {"V": 7, "ONE": case.one, "ALL": case.all}


def test_header_columns_are_not_written_to_the_value():
    assert SPEC.payload_columns == (("V", SqlType("INT")),)
    assert encode_value(SPEC, {"V": 7, "ONE": b"!", "ALL": []}) == b'{"V":7}'


def test_the_headers_struct_keeps_its_declared_field_names():
    spec = SerdeSpec.of({"H": "ARRAY<STRUCT<`key` STRING, `value` BYTES>>"}, header_columns=(("H", None),))
    assert decode(spec, None, b"{}", 0, (("x", b"y"),)).value == {"H": [{"key": "x", "value": b"y"}]}


@pytest.mark.parametrize("key, kind, words", [
    ("a", "STRING", "declare it BYTES"),
    (None, "ARRAY<BYTES>", "declare it ARRAY<STRUCT<KEY STRING, VALUE BYTES>>"),
    (None, "ARRAY<STRUCT<NAME STRING, VALUE BYTES>>", "not ARRAY<STRUCT<NAME STRING, VALUE BYTES>>"),
    (None, "ARRAY<STRUCT<KEY STRING, VALUE STRING>>", "declare it"),
])
def test_a_header_column_needs_the_type_of_what_it_reads(key, kind, words):
    assert words in header_problem("H", key, SqlType.parse(kind))
    with pytest.raises(ValueError, match="H"):
        SerdeSpec.of({"H": kind}, header_columns=(("H", key),))


@pytest.mark.parametrize("key, kind", [("a", "BYTES"), (None, HEADERS), (None, "ARRAY<STRUCT<key STRING, value BYTES>>")])
def test_the_types_a_header_column_may_have(key, kind):
    assert header_problem("H", key, SqlType.parse(kind)) is None
