"""Record formats, type strings and per-type conversions (streamjoin.serde.formats, streamjoin.dialect.types).

Every table row is a `Case(inputs, expected)`; an `expected` of `Err("words")` means decoding must
raise DecodeError (or ValueError for a spec) whose reason contains those words.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest

from streamjoin.serde.formats import DecodeError, DecodedRecord, EncodeError, SerdeSpec, decode, encode_key, encode_value
from streamjoin.serde.time import format_timestamp
from streamjoin.dialect.types import SqlType, TypeSyntaxError, parse_type
from tests.paths import CONFORMANCE


@dataclass(frozen=True)
class Case:
    inputs: Any
    expected: Any


@dataclass(frozen=True)
class Err:
    contains: str


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=timezone.utc)


INT, STRING = SqlType("INT"), SqlType("STRING")

# ---- type strings -------------------------------------------------------------------------------

TYPE_CASES = [
    Case("STRING", SqlType("STRING")),
    Case("VARCHAR(32)", SqlType("STRING", (32,))),
    Case("INTEGER", INT),
    Case("int not null", INT),
    Case("BIGINT", SqlType("BIGINT")),
    Case("DECIMAL(10, 4)", SqlType("DECIMAL", (10, 4))),
    Case("NUMERIC(5)", SqlType("DECIMAL", (5, 0))),
    Case("TIMESTAMP(3)", SqlType("TIMESTAMP", (3,))),
    Case("TIMESTAMP", SqlType("TIMESTAMP", (3,))),
    Case("TIMESTAMP(3) WITH LOCAL TIME ZONE", SqlType("TIMESTAMP_LTZ", (3,))),
    Case("TIMESTAMP_LTZ(3) PROCTIME", SqlType("TIMESTAMP_LTZ", (3,), proctime=True)),
    Case("ARRAY<INT>", SqlType("ARRAY", elements=(INT,))),
    Case("ARRAY<ARRAY<INT>>", SqlType("ARRAY", elements=(SqlType("ARRAY", elements=(INT,)),))),
    Case("MAP<STRING, INT>", SqlType("MAP", elements=(STRING, INT))),
    Case("STRUCT<a INT, `b c` STRING>", SqlType("STRUCT", fields=(("a", INT), ("b c", STRING)))),
    Case("ROW(a INT)", SqlType("STRUCT", fields=(("a", INT),))),
    Case("FOO", Err("unknown type 'FOO'")),
    Case("ARRAY<INT", Err("ends early")),
    Case("INT X", Err("unexpected 'X' at position 4")),
    Case("INT;", Err("unexpected character ';' at position 3")),
]


@pytest.mark.parametrize("case", TYPE_CASES, ids=lambda c: c.inputs)
def test_parse_type(case: Case) -> None:
    if isinstance(case.expected, Err):
        with pytest.raises(TypeSyntaxError, match=case.expected.contains):
            parse_type(case.inputs)
    else:
        assert parse_type(case.inputs) == case.expected
        assert parse_type(str(case.expected)) == case.expected  # str() writes a parseable type


# ---- one JSON value column of each type ---------------------------------------------------------
# inputs: (type string, JSON text of the field)

JSON_VALUE_CASES = [
    Case(("STRING", '"x"'), "x"),
    Case(("STRING", "12"), "12"),  # ksqlDB reads any JSON value into a STRING as its text
    Case(("STRING", '{"a":1}'), '{"a":1}'),
    Case(("VARCHAR(8)", '"abc"'), "abc"),
    Case(("INT", "5"), 5),
    Case(("INT", '"7"'), 7),
    Case(("INT", "2147483648"), Err("out of range")),
    Case(("INT", "1.5"), Err("not an integer")),
    Case(("INT", "true"), Err("cannot read True as INT")),
    Case(("INT", '"x"'), Err("cannot read 'x' as INT")),
    Case(("BIGINT", "1099511627776"), 2**40),
    Case(("DOUBLE", "1.25"), 1.25),
    Case(("DOUBLE", '"2.5"'), 2.5),
    Case(("DOUBLE", "3"), 3.0),
    Case(("DECIMAL(10, 4)", "11.11"), Decimal("11.1100")),
    Case(("DECIMAL(10, 4)", '"1.23456"'), Decimal("1.2346")),
    Case(("DECIMAL(10, 4)", "1234567.1"), Err("more than 10 digits")),
    Case(("BOOLEAN", "true"), True),
    Case(("BOOLEAN", '"FALSE"'), False),
    Case(("BOOLEAN", "1"), Err("cannot read 1 as BOOLEAN")),
    Case(("TIMESTAMP(3)", '"1970-01-01 09:00:00.000"'), utc(1970, 1, 1, 9)),
    Case(("TIMESTAMP(3)", "1000"), utc(1970, 1, 1, 0, 0, 1)),
    Case(("TIMESTAMP(3)", '"1000"'), utc(1970, 1, 1, 0, 0, 1)),
    Case(("TIMESTAMP_LTZ(3)", '"1970-01-01T01:00:00+01:00"'), utc(1970, 1, 1)),
    Case(("TIMESTAMP(3)", '"soon"'), Err("expected 'YYYY-MM-DD HH:MM:SS.fff' or epoch millis")),
    Case(("ARRAY<INT>", "[1,null,3]"), [1, None, 3]),
    Case(("ARRAY<ARRAY<INT>>", "[[1],[]]"), [[1], []]),
    Case(("ARRAY<INT>", '[1,"x"]'), Err("column value.c[1]: cannot read 'x' as INT")),
    Case(("ARRAY<INT>", '"x"'), Err("expected a JSON array")),
    Case(("MAP<STRING, INT>", '{"a":1,"b":null}'), {"a": 1, "b": None}),
    Case(("MAP<STRING, INT>", "[1]"), Err("expected a JSON object")),
    Case(("STRUCT<x INT, y STRING>", '{"X":1}'), {"x": 1, "y": None}),
    Case(("STRUCT<x INT>", '{"x":"no"}'), Err("column value.c.x")),
    Case(("BYTES", '"AAE="'), b"\x00\x01"),
    Case(("INT", "null"), None),
    Case(("ANY", '{"a":[1,2.5]}'), {"a": [1, 2.5]}),  # a run-time type: the JSON value as is
]


@pytest.mark.parametrize("case", JSON_VALUE_CASES, ids=lambda c: f"{c.inputs[0]}:{c.inputs[1]}")
def test_json_value_types(case: Case) -> None:
    type_text, field_json = case.inputs
    spec = SerdeSpec.of({"c": type_text}, value_format="JSON")
    payload = f'{{"c":{field_json}}}'.encode()
    if isinstance(case.expected, Err):
        with pytest.raises(DecodeError, match=case.expected.contains.replace("[", r"\[").replace("]", r"\]")):
            decode(spec, None, payload, 0)
    else:
        assert decode(spec, None, payload, 0).value == {"c": case.expected}


# encode(decode(bytes)) == bytes for payloads in the canonical written form.
ROUND_TRIPS = [
    Case(({"s": "STRING", "n": "INT", "d": "DECIMAL(10, 4)", "f": "DOUBLE", "b": "BOOLEAN"}, "JSON"),
         b'{"s":"a\\"b","n":-3,"d":11.1100,"f":0.5,"b":false}'),
    Case(({"t": "TIMESTAMP(3)", "a": "ARRAY<ARRAY<INT>>", "m": "MAP<STRING, DOUBLE>"}, "JSON"),
         b'{"t":"1970-01-01 10:15:00.000","a":[[1,2],null],"m":{"k":1.5}}'),
    Case(({"st": "STRUCT<x INT, y STRING>", "by": "BYTES"}, "JSON"), b'{"st":{"x":1,"y":null},"by":"AAE="}'),
    Case(({"s": "STRING", "n": "BIGINT", "t": "TIMESTAMP(3)", "d": "DECIMAL(4, 2)"}, "DELIMITED"),
         b'"a,b",7,1970-01-01 00:00:01.500,12.30'),
    Case(({"s": "STRING", "n": "INT"}, "DELIMITED"), b",5"),
    Case(({"n": "BIGINT"}, "KAFKA"), struct.pack(">q", -2)),
    Case(({"x": "ANY", "y": "ANY"}, "JSON"), b'{"x":{"k":[1,"a",null,true]},"y":-0.5}'),
    Case(({"x": "ANY", "n": "INT"}, "DELIMITED"), b"some text,1"),
]


@pytest.mark.parametrize("case", ROUND_TRIPS, ids=lambda c: c.expected.decode("latin-1"))
def test_value_round_trip(case: Case) -> None:
    columns, value_format = case.inputs
    spec = SerdeSpec.of(columns, value_format=value_format)
    assert encode_value(spec, decode(spec, None, case.expected, 0).value) == case.expected


# ---- value formats ------------------------------------------------------------------------------
# inputs: (spec options, value bytes); expected: the decoded value dict

TWO_COLUMNS = {"id": "STRING", "name": "STRING", "age": "INT"}
VALUE_FORMAT_CASES = [
    Case(({}, b'{"NAME":"bob","Age":49}'), {"name": "bob", "age": 49}),  # names match case-insensitively
    Case(({}, b'{"name":"bob","extra":1}'), {"name": "bob", "age": None}),  # missing = NULL, extra ignored
    Case(({}, None), None),  # no bytes: tombstone / null-value record
    Case(({}, b"null"), None),  # JSON null is a null value too
    Case(({}, b"[1,2]"), Err("value: expected a JSON object, got list")),
    Case(({}, b'{"name":'), Err("value: not valid JSON")),
    Case(({}, b'{"name":"\xff"}'), Err("value: not valid JSON")),
    Case(({"value_format": "DELIMITED"}, b"bob,49"), {"name": "bob", "age": 49}),
    Case(({"value_format": "DELIMITED"}, b'"b,ob",'), {"name": "b,ob", "age": None}),  # empty = NULL
    Case(({"value_format": "DELIMITED"}, b",49"), {"name": None, "age": 49}),
    Case(({"value_format": "DELIMITED"}, b"bob"), Err("expected 2 DELIMITED fields, got 1")),
    Case(({"value_format": "DELIMITED"}, b"bob,x"), Err("column value.age: cannot read 'x' as INT")),
    Case(({"value_format": "DELIMITED", "delimiter": "TAB"}, b"bob\t49"), {"name": "bob", "age": 49}),
]


@pytest.mark.parametrize("case", VALUE_FORMAT_CASES, ids=lambda c: repr(c.inputs))
def test_value_formats(case: Case) -> None:
    options, value_bytes = case.inputs
    spec = SerdeSpec.of(TWO_COLUMNS, ["id"], **options)
    if isinstance(case.expected, Err):
        with pytest.raises(DecodeError, match=case.expected.contains):
            decode(spec, b"k", value_bytes, 0)
    else:
        assert decode(spec, b"k", value_bytes, 0) == DecodedRecord(("k",), case.expected, 0)


def test_unwrapped_single_value() -> None:
    spec = SerdeSpec.of({"k": "STRING", "v": "INT"}, ["k"], wrap_single_value=False)
    assert decode(spec, b"a", b"5", 0).value == {"v": 5}
    assert encode_value(spec, {"v": 5}) == b"5"


# ---- key formats --------------------------------------------------------------------------------
# inputs: (key format, key columns, key bytes); expected: the key tuple

KEY_CASES = [
    Case(("KAFKA", {"k": "STRING"}, "é".encode()), ("é",)),
    Case(("KAFKA", {"k": "STRING"}, b""), ("",)),  # the empty string is a key, not a null key
    Case(("KAFKA", {"k": "INT"}, b"\x00\x00\x01\x00"), (256,)),
    Case(("KAFKA", {"k": "INT"}, b"\xff\xff\xff\xfe"), (-2,)),
    Case(("KAFKA", {"k": "BIGINT"}, struct.pack(">q", 2**40)), (2**40,)),
    Case(("KAFKA", {"k": "DOUBLE"}, struct.pack(">d", 1.5)), (1.5,)),
    Case(("KAFKA", {"k": "BYTES"}, b"\x00\x01"), (b"\x00\x01",)),
    Case(("KAFKA", {"k": "INT"}, b"\x00\x01"), Err("INT in the KAFKA format is 4 bytes, got 2")),
    Case(("KAFKA", {"k": "STRING"}, b"\xff"), Err("key.k: not UTF-8")),
    Case(("KAFKA", {"k": "STRING"}, None), None),
    Case(("JSON", {"k": "INT"}, b"42"), (42,)),  # one key column: a bare JSON value
    Case(("JSON", {"k": "STRING"}, b"null"), None),
    Case(("JSON", {"a": "STRING", "b": "INT"}, b'{"a":"x","b":2}'), ("x", 2)),  # several: an object
    Case(("JSON", {"k": "INT"}, b"[1]"), Err("cannot read [1] as INT")),
    Case(("DELIMITED", {"a": "STRING", "b": "INT"}, b"x,2"), ("x", 2)),
    Case(("NONE", {}, b"anything"), None),
]


@pytest.mark.parametrize("case", KEY_CASES, ids=lambda c: f"{c.inputs[0]}:{c.inputs[2]!r}")
def test_key_formats(case: Case) -> None:
    key_format, key_columns, key_bytes = case.inputs
    spec = SerdeSpec.of({**key_columns, "v": "STRING"}, list(key_columns), key_format=key_format)
    if isinstance(case.expected, Err):
        with pytest.raises(DecodeError, match=case.expected.contains.replace("[", r"\[").replace("]", r"\]")):
            decode(spec, key_bytes, b'{"v":"x"}', 0)
        return
    assert decode(spec, key_bytes, b'{"v":"x"}', 0).key == case.expected
    if case.expected is not None and key_format != "NONE":
        assert encode_key(spec, case.expected) == key_bytes


@pytest.mark.parametrize("key_bytes, expected", [
    (b'{"k": 42}', (42,)),  # Flink's 'key.format' = 'json' writes a row: an object even for one column
    (b'{"K": 42}', (42,)),  # names match case-insensitively, as in values
    (b"null", None),
    (b"42", Err("expected a JSON object")),
])
def test_a_single_column_json_key_as_a_row(key_bytes, expected) -> None:
    spec = SerdeSpec.of({"k": "INT", "v": "STRING"}, ["k"], key_format="JSON", wrap_single_key=True)
    if isinstance(expected, Err):
        with pytest.raises(DecodeError, match=expected.contains):
            decode(spec, key_bytes, b'{"v":"x"}', 0)
        return
    assert decode(spec, key_bytes, b'{"v":"x"}', 0).key == expected
    if expected is not None:
        assert json.loads(encode_key(spec, expected)) == {"k": 42}


def test_encode_key_bare_value_and_errors() -> None:
    spec = SerdeSpec.of({"k": "INT", "v": "STRING"}, ["k"])
    assert encode_key(spec, 1) == b"\x00\x00\x00\x01"
    assert encode_key(spec, None) is None
    with pytest.raises(EncodeError, match="has 2 parts"):
        encode_key(spec, (1, 2))
    with pytest.raises(EncodeError, match="row has no value column 'v'"):
        encode_value(spec, {"k": 1})


# ---- spec validation ----------------------------------------------------------------------------
# inputs: SerdeSpec.of arguments

SPEC_ERRORS = [
    Case(({"k": "BOOLEAN", "v": "INT"}, ["k"], {}), Err("KAFKA format supports INT, BIGINT, DOUBLE, STRING, BYTES")),
    Case(({"a": "INT", "b": "INT", "v": "INT"}, ["a", "b"], {}), Err("KAFKA format holds a single column")),
    Case(({"k": "INT", "v": "INT"}, ["k"], {"key_format": "NONE"}), Err("'NONE' cannot have key columns")),
    Case(({"v": "ARRAY<INT>"}, [], {"value_format": "DELIMITED"}), Err("DELIMITED does not support ARRAY")),
    Case(({"v": "INT"}, [], {"value_format": "PARQUET"}), Err("unknown value format 'PARQUET'")),
    Case(({"v": "INT"}, [], {"timestamp": "t"}), Err("timestamp column 't' is not a column")),
    Case(({"v": "STRING"}, [], {"timestamp": "v"}), Err("must be TIMESTAMP or BIGINT")),
    Case(({"v": "BIGINT"}, [], {"timestamp": "v", "timestamp_format": "yyyy"}), Err("must be a STRING")),
    Case(({"v": "INT"}, ["k"], {}), Err("key columns \\['k'\\] are not among the columns")),
]


@pytest.mark.parametrize("case", SPEC_ERRORS, ids=lambda c: c.expected.contains)
def test_spec_errors(case: Case) -> None:
    columns, key, options = case.inputs
    with pytest.raises(ValueError, match=case.expected.contains):
        SerdeSpec.of(columns, key, **options)


# ---- event time ---------------------------------------------------------------------------------
# inputs: (columns, timestamp column, spec options, value bytes, record ts); expected: event time

EVENT_TIME_CASES = [
    Case(({"v": "INT"}, None, {}, b'{"v":1}', 7), 7),  # no column: the record timestamp
    Case(({"t": "TIMESTAMP(3)"}, "t", {}, b'{"t":"1970-01-01 00:00:03.000"}', 7), 3000),
    Case(({"t": "BIGINT"}, "t", {}, b'{"t":4000}', 7), 4000),
    Case(({"t": "TIMESTAMP(3)"}, "t", {}, None, 7), 7),  # a tombstone has no columns: record time
    Case(({"t": "TIMESTAMP(3)"}, "t", {}, b'{"t":null}', 7), Err("timestamp column t is NULL")),
    # Flink `METADATA FROM 'timestamp' VIRTUAL`: filled from the record, absent from the payload
    Case(({"t": "TIMESTAMP(3)"}, "t", {"record_ts_columns": ("t",)}, b"{}", 60000), 60000),
    # ksqlDB TIMESTAMP_FORMAT: a STRING column read with a Java pattern (UTC)
    Case(({"t": "STRING"}, "t", {"timestamp_format": "yyyy-MM-dd HH:mm:ss"}, b'{"t":"1970-01-01 00:00:09"}', 7), 9000),
    Case(({"t": "STRING"}, "t", {"timestamp_format": "yyyy-MM-dd"}, b'{"t":"01/01/1970"}', 7), Err("does not match")),
]


@pytest.mark.parametrize("case", EVENT_TIME_CASES, ids=lambda c: repr(c.inputs[3]))
def test_event_time(case: Case) -> None:
    columns, ts_column, options, value_bytes, record_ts = case.inputs
    spec = SerdeSpec.of(columns, timestamp=ts_column, **options)
    if isinstance(case.expected, Err):
        with pytest.raises(DecodeError, match=case.expected.contains):
            decode(spec, None, value_bytes, record_ts)
    else:
        assert decode(spec, None, value_bytes, record_ts).ts == case.expected


def test_record_ts_and_proctime_columns_are_not_read_from_the_payload() -> None:
    spec = SerdeSpec.of({"t": "TIMESTAMP(3)", "p": "TIMESTAMP_LTZ(3) PROCTIME", "v": "INT"},
                        timestamp="t", record_ts_columns=("t",))
    record = decode(spec, None, b'{"v":1,"t":"2000-01-01 00:00:00.000","p":5}', 60000)
    assert record.value == {"t": utc(1970, 1, 1, 0, 1), "v": 1}  # PROCTIME: the engine adds it
    assert [n for n, _ in spec.decoded_columns] == ["t", "v"]
    assert encode_value(spec, record.value) == b'{"v":1}'


def test_any_columns_write_run_time_values() -> None:
    spec = SerdeSpec.of({"x": "ANY"})
    written = [encode_value(spec, {"x": v}) for v in (Decimal("1.50"), utc(1970, 1, 1), b"\x00", (1, "a"))]
    assert written == [b'{"x":1.50}', b'{"x":"1970-01-01 00:00:00.000"}', b'{"x":"AA=="}', b'{"x":[1,"a"]}']
    with pytest.raises(EncodeError, match="cannot write object"):
        encode_value(spec, {"x": object()})


def test_timestamps_are_written_as_utc_text() -> None:
    spec = SerdeSpec.of({"t": "TIMESTAMP(3)"})
    assert encode_value(spec, {"t": 36900000}) == b'{"t":"1970-01-01 10:15:00.000"}'  # epoch millis
    assert encode_value(spec, {"t": datetime(1970, 1, 1, 10, 15)}) == b'{"t":"1970-01-01 10:15:00.000"}'
    assert encode_value(spec, {"t": "1970-01-01T10:15:00Z"}) == b'{"t":"1970-01-01 10:15:00.000"}'  # text
    assert format_timestamp(-1) == "1969-12-31 23:59:59.999"
    with pytest.raises(EncodeError, match="cannot read 'soon' as TIMESTAMP"):
        encode_value(spec, {"t": "soon"})


# ---- every conformance input through its source's spec -----------------------------------------



def conformance_inputs() -> list[tuple[str, SerdeSpec, dict]]:
    """(case id, spec of the input's source, input) for every input of every conformance case.
    A timestamp column absent from all of a source's input values is a virtual column filled from
    the record timestamp (conformance README: Flink `METADATA ... VIRTUAL`)."""
    found = []
    for path in sorted(CONFORMANCE.glob("*.json")):
        for case in json.loads(path.read_text())["cases"]:
            for source in case["sources"]:
                inputs = [i for i in case["inputs"] if i.get("source") == source["name"]]
                ts_column = source["timestamp"]
                virtual = ts_column is not None and all(
                    i["value"] is None or ts_column not in i["value"] for i in inputs)
                spec = SerdeSpec.of(source["columns"], source["key"], timestamp=ts_column,
                                    record_ts_columns=(ts_column,) if virtual else ())
                found.extend((case["id"], spec, i) for i in inputs)
    return found


def test_every_conformance_input_round_trips() -> None:
    inputs = conformance_inputs()
    assert len(inputs) > 500, f"conformance inputs not found under {CONFORMANCE}"
    for case_id, spec, given in inputs:
        key_bytes = encode_key(spec, given["key"]) if spec.key_columns else None
        value_bytes = encode_value(spec, given["value"])
        record = decode(spec, key_bytes, value_bytes, given["ts"])
        assert record.key == (None if given["key"] is None or not spec.key_columns else (given["key"],)), case_id
        assert encode_value(spec, record.value) == value_bytes, case_id
        if spec.timestamp_column is not None:
            assert record.ts == given["ts"], case_id  # the column equals ts (conformance README)
