"""Registered schemas and SQL columns both ways (serde.registry_schemas), `.proto` text without
protoc (serde.protoschema), and PROTOBUF_NOSR, which needs no registry."""

from __future__ import annotations

import json

import pytest

from streamjoin.dialect.types import SqlType
from streamjoin.serde.formats import SerdeSpec, decode, encode_key, encode_value
from streamjoin.serde.protoschema import ProtoSchemaError, message_class, parse_proto
from streamjoin.serde.registry_schemas import inferred_columns, schema_for
from streamjoin.serde.values import DecodeError

COLUMNS = [("ID", "BIGINT"), ("NAME", "STRING"), ("PRICE", "DOUBLE"), ("OK", "BOOLEAN"), ("TAGS", "ARRAY<STRING>"),
           ("ATTRS", "MAP<STRING, INT>"), ("ADDRESS", "STRUCT<CITY STRING, ZIP INT>"), ("RAW", "BYTES")]
TYPED = [(n, SqlType.parse(t)) for n, t in COLUMNS]


@pytest.mark.parametrize("fmt", ["AVRO", "JSON_SR", "PROTOBUF"])
def test_the_schema_of_columns_gives_the_same_columns_back(fmt):
    schema_type = {"JSON_SR": "JSON"}.get(fmt, fmt)
    inferred = inferred_columns(schema_type, schema_for(fmt, TYPED, bare=False), None, "ROWKEY")
    assert [(n, str(t)) for n, t in inferred] == [(n, str(t)) for n, t in TYPED]


@pytest.mark.parametrize("fmt, schema, expected", [
    ("AVRO", '"long"', [("ROWKEY", "BIGINT")]),
    ("AVRO", '["null", "string"]', [("ROWKEY", "STRING")]),
    ("JSON", '{"type":"integer","connect.type":"int32"}', [("ROWKEY", "INT")]),
    ("JSON", '{"oneOf":[{"type":"null"},{"type":"integer","connect.type":"int32"}]}', [("ROWKEY", "INT")]),
    ("JSON", '{"type":"object","properties":{"foo":{"type":"integer"}}}', [("foo", "BIGINT")]),
    ("AVRO", json.dumps({"type": "record", "name": "r", "fields": [
        {"name": "d", "type": {"type": "bytes", "logicalType": "decimal", "precision": 4, "scale": 2}},
        {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}}]}),
     [("d", "DECIMAL(4, 2)"), ("t", "TIMESTAMP")]),
])
def test_a_registered_schema_gives_columns(fmt, schema, expected):
    assert [(n, str(t)) for n, t in inferred_columns(fmt, schema, None, "ROWKEY")] == \
        [(n, str(SqlType.parse(t))) for n, t in expected]


def test_a_named_message_of_a_proto_with_several():
    text = 'syntax = "proto3"; message A {uint32 k1 = 1;} message B {string NAME = 1; int32 FOREIGN_KEY = 2;}'
    assert [(n, str(t)) for n, t in inferred_columns("PROTOBUF", text, "B", "ROWKEY")] == \
        [("NAME", "STRING"), ("FOREIGN_KEY", "INT")]
    assert message_class(text, "B")(NAME="x").NAME == "x"


@pytest.mark.parametrize("text", ["message {", 'syntax = "proto3"; message A { Unknown u = 1; }'])
def test_a_proto_outside_the_subset_is_refused(text):
    with pytest.raises((ProtoSchemaError, IndexError)):
        parse_proto(text)


def test_protobuf_nosr_round_trips_without_a_registry_and_null_reads_as_the_default():
    spec = SerdeSpec.of(dict(COLUMNS), key=["ID"], key_format="KAFKA", value_format="PROTOBUF_NOSR")
    row = {"NAME": "n", "PRICE": 1.5, "OK": True, "TAGS": ["a"], "ATTRS": {"x": 1},
           "ADDRESS": {"CITY": "c", "ZIP": 9}, "RAW": b"\x01"}
    decoded = decode(spec, encode_key(spec, (7,)), encode_value(spec, row), 0)
    assert decoded.key == (7,) and decoded.value == row
    nulls = decode(spec, None, encode_value(spec, dict.fromkeys(row)), 0).value
    assert (nulls["NAME"], nulls["PRICE"], nulls["OK"], nulls["TAGS"]) == ("", 0.0, False, [])


def test_protobuf_null_decimals_and_null_elements_read_back_as_proto3_writes_them():
    """A NULL DECIMAL (a string field, written as "") reads back NULL; a NULL element of an array
    is written as the element's default (proto3 has no null), never as the text "None"."""
    spec = SerdeSpec.of({"ID": "BIGINT", "P": "DECIMAL(4,2)", "TAGS": "ARRAY<STRING>", "NS": "ARRAY<INT>",
                         "AS": "ARRAY<STRUCT<CITY STRING>>"}, key=["ID"], value_format="PROTOBUF_NOSR")
    row = {"P": None, "TAGS": ["a", None], "NS": [None, 2], "AS": [None, {"CITY": "c"}]}
    assert decode(spec, None, encode_value(spec, row), 0).value == \
        {"P": None, "TAGS": ["a", ""], "NS": [0, 2], "AS": [{"CITY": ""}, {"CITY": "c"}]}


def test_bytes_that_are_no_protobuf_message_are_a_decode_error_with_the_reason():
    spec = SerdeSpec.of({"ID": "BIGINT", "NAME": "STRING"}, key=["ID"], value_format="PROTOBUF_NOSR")
    with pytest.raises(DecodeError, match="not a PROTOBUF_NOSR message"):
        decode(spec, None, b"\xff\xff\xff", 0)
