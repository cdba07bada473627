"""Runs of AVRO, PROTOBUF and JSON_SR values decoded and encoded together (serde.registry_runs,
through serde.batches) give what the serializers give record by record, against the session's
schema registry: randomized rows (NULLs, values the writers convert, values they refuse), damaged
records among good ones, runs of two schema versions, fields named in another case. No broker and
no Spark."""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryError

from streamjoin.dialect.formats import SchemaRefs
from streamjoin.runtime.contract import InputRow
from streamjoin.serde import batches
from streamjoin.serde.formats import DecodeError, SerdeSpec, _codec, decode, encode_value
from streamjoin.serde.registry_codecs import new_client

pytestmark = pytest.mark.integration
FORMATS = ["AVRO", "PROTOBUF", "JSON_SR"]
SCALARS = {"ID": "STRING", "N": "BIGINT", "I": "INT", "S": "STRING", "D": "DOUBLE", "B": "BOOLEAN"}
NESTED = {**SCALARS, "P": "DECIMAL(6,2)", "T": "TIMESTAMP", "TAGS": "ARRAY<STRING>", "M": "MAP<STRING, INT>",
          "ADDR": "STRUCT<CITY STRING, ZIP INT>"}


def _spec(fmt: str, columns: dict, topic: str | None = None, **options) -> SerdeSpec:
    return SerdeSpec.of(columns, key=["ID"], value_format=fmt, topic=topic or f"r{uuid.uuid4().hex[:8]}", **options)


def _value(rng: random.Random, kind: str, refused: bool, converted: bool):
    """A value of column type `kind`: often NULL; where `converted`, sometimes one some writers
    convert (text of a number); where `refused`, sometimes one no writer takes."""
    if rng.random() < 0.2:
        return None
    if refused and rng.random() < 0.1:
        return "not a number" if kind in ("BIGINT", "INT", "DOUBLE") else object()
    convert = converted and rng.random() < 0.1
    values = {
        "BIGINT": lambda: str(rng.randint(-2**40, 2**40)) if convert else rng.randint(-2**62, 2**62),
        "INT": lambda: rng.randint(-2**31, 2**31 - 1),
        "STRING": lambda: rng.choice(["", "a", "ü ☃", 'q"\\', str(rng.random())]),
        "DOUBLE": lambda: rng.randint(-5, 5) if convert else rng.uniform(-1e6, 1e6),
        "BOOLEAN": lambda: rng.random() < 0.5,
        "DECIMAL(6,2)": lambda: Decimal(rng.randint(-9999, 9999)).scaleb(-2),
        "TIMESTAMP": lambda: datetime.fromtimestamp(rng.randint(0, 2**31) / 1000, timezone.utc).replace(tzinfo=None),
        "ARRAY<STRING>": lambda: [rng.choice(["x", None, "y"]) for _ in range(rng.randint(0, 3))],
        "MAP<STRING, INT>": lambda: {f"k{n}": rng.choice([n, None]) for n in range(rng.randint(0, 2))},
        "STRUCT<CITY STRING, ZIP INT>": lambda: {"CITY": rng.choice(["c", None]), "ZIP": rng.randint(0, 99)},
    }
    return values[kind]()


def _rows(seed: int, columns: dict, refused: bool = False, count: int = 40, converted: bool = True) -> list[dict]:
    rng = random.Random(seed)
    return [{name: _value(rng, kind, refused, converted) for name, kind in columns.items() if name != "ID"} for _ in range(count)]


def _one_by_one_values(spec: SerdeSpec, rows: list[dict]) -> list:
    out = []
    for row in rows:
        try:
            out.append(encode_value(spec, row))
        except ValueError as error:
            out.append(type(error))
    return out


def _decoded_one_by_one(spec: SerdeSpec, rows: list[InputRow]) -> list:
    def attempt(r: InputRow):
        try:
            return decode(spec, r.key, r.value, r.ts)
        except DecodeError:
            return None
    return list(map(attempt, rows))


def _inputs(values: list) -> list[InputRow]:
    return [InputRow("t", 0, n, 1_000 + n, f"k{n % 3}".encode(), v) for n, v in enumerate(values)]


def _runs(spec: SerdeSpec):
    return _codec(spec).write_columns.__self__  # the spec's SideRuns


CASES = [(fmt, columns, seed) for fmt in FORMATS for columns in ("scalars", "nested") for seed in range(3)]


@pytest.mark.parametrize("fmt, columns, seed", CASES, ids=[f"{f}-{c}-{s}" for f, c, s in CASES])
def test_a_run_encodes_and_decodes_as_its_records_do(schema_registry, fmt, columns, seed):
    spec = _spec(fmt, SCALARS if columns == "scalars" else NESTED)
    rows = _rows(seed, SCALARS if columns == "scalars" else NESTED)
    expected = _one_by_one_values(spec, rows)
    if not all(isinstance(value, bytes) for value in expected):  # JSON_SR refuses a number's text
        with pytest.raises((ValueError, TypeError, ArithmeticError, LookupError)):
            batches.encode_values(spec, rows)
        rows = [row for row, value in zip(rows, expected) if isinstance(value, bytes)]
        expected = [value for value in expected if isinstance(value, bytes)]
    assert batches.encode_values(spec, rows) == expected
    # PROTOBUF's message and repeated fields keep the record path, both ways
    takes_runs = fmt != "PROTOBUF" or columns == "scalars"
    assert (_runs(spec).write_plan is not None) == takes_runs
    inputs = _inputs(expected)
    decoded = batches.decode_all(spec, inputs)
    assert decoded == _decoded_one_by_one(spec, inputs)
    assert all(record is not None for record in decoded)
    assert (batches.decode_columns(spec, [r.key for r in inputs], expected) is not None) == takes_runs


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_run_with_a_row_no_writer_takes_raises_and_one_by_one_says_which(schema_registry, fmt):
    spec = _spec(fmt, SCALARS)
    rows = _rows(7, SCALARS, refused=True, count=200)
    expected = _one_by_one_values(spec, rows)
    assert any(isinstance(e, type) for e in expected)  # some row is refused
    with pytest.raises((ValueError, TypeError, ArithmeticError, LookupError)):
        batches.encode_values(spec, rows)
    good = [row for row, value in zip(rows, expected) if isinstance(value, bytes)]
    assert batches.encode_values(spec, good) == [value for value in expected if isinstance(value, bytes)]


# Ways a record can be wrong, each (name, good value -> damaged value).
DAMAGES = [
    ("no value", lambda value: None),
    ("empty", lambda value: b""),
    ("not framed", lambda value: b"\x05" + value[1:]),
    ("framed with a schema GUID", lambda value: b"\x01" + bytes(16) + value[5:]),
    ("a schema id the registry does not know", lambda value: b"\x00\x7f\xff\xff\xfe" + value[5:]),
    ("cut short", lambda value: value[:len(value) // 2]),
    ("the framing alone", lambda value: value[:5]),
    ("not the format", lambda value: value[:5] + b"\xff\xff\xff"),
    ("a number's text (JSON_SR's schema refuses it)",
     lambda value: value[:5] + b'{"N": "7", "I": 1, "S": "s", "D": 1.5, "B": true}'),
    ("a byte after the value", lambda value: value + b"\x00"),
]


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("damage", [d[1] for d in DAMAGES], ids=[d[0] for d in DAMAGES])
def test_damaged_records_among_good_ones_decode_as_they_do_one_by_one(schema_registry, fmt, damage):
    spec = _spec(fmt, SCALARS)
    values = batches.encode_values(spec, _rows(5, SCALARS, converted=False))
    for at in (5, 17, 39):  # (the first record of a schema id goes through the serializer itself)
        values[at] = damage(values[at])
    inputs = _inputs(values)
    decoded = batches.decode_all(spec, inputs)
    assert decoded == _decoded_one_by_one(spec, inputs)
    assert decoded[1] is not None


@pytest.mark.parametrize("fmt", ["AVRO", "JSON_SR"])
def test_a_run_of_two_schema_versions_reads_each_with_its_own(schema_registry, fmt):
    """Records of the subject's first schema, then of a second one with another column, in one run."""
    topic = f"r{uuid.uuid4().hex[:8]}"
    first = _spec(fmt, SCALARS, topic)
    old = batches.encode_values(first, _rows(1, SCALARS, count=10, converted=False))
    wider = {**SCALARS, "EXTRA": "STRING"}
    second = _spec(fmt, wider, topic, register_schemas=True)
    new = batches.encode_values(second, _rows(2, wider, count=10, converted=False))
    assert old[0][1:5] != new[0][1:5]  # two schema ids
    values = [v for pair in zip(old, new) for v in pair]
    inputs = _inputs(values)
    decoded = batches.decode_all(first, inputs)
    assert decoded == _decoded_one_by_one(first, inputs)
    assert batches.decode_columns(first, [r.key for r in inputs], values) is not None


def test_fields_named_in_another_case_read_and_write_as_one_by_one(schema_registry):
    topic = f"r{uuid.uuid4().hex[:8]}"
    lower = ('{"type": "record", "name": "R", "fields": [' + ", ".join(
        f'{{"name": "{name}", "type": ["null", "{kind}"], "default": null}}'
        for name, kind in [("n", "long"), ("s", "string"), ("d", "double"), ("unused", "int")]) + "]}")
    new_client(schema_registry).register_schema(f"{topic}-value", Schema(lower, "AVRO"))
    spec = _spec("AVRO", {"ID": "STRING", "N": "BIGINT", "S": "STRING", "D": "DOUBLE"}, topic)
    rows = _rows(3, {"N": "BIGINT", "S": "STRING", "D": "DOUBLE"})
    values = batches.encode_values(spec, rows)
    assert values == _one_by_one_values(spec, rows) and _runs(spec).write_plan is not None
    inputs = _inputs(values)
    assert batches.decode_all(spec, inputs) == _decoded_one_by_one(spec, inputs)
    assert batches.decode_columns(spec, [r.key for r in inputs], values) is not None


@pytest.mark.parametrize("fmt", ["AVRO", "JSON_SR"])
def test_one_column_reads_the_records_one_field_whatever_its_name(schema_registry, fmt):
    topic = f"r{uuid.uuid4().hex[:8]}"
    rows = _rows(4, {"OTHER": "BIGINT"}, converted=False)
    values = batches.encode_values(_spec(fmt, {"ID": "STRING", "OTHER": "BIGINT"}, topic), rows)
    reader = _spec(fmt, {"ID": "STRING", "N": "BIGINT"}, topic)
    inputs = _inputs(values)
    decoded = batches.decode_all(reader, inputs)
    assert decoded == _decoded_one_by_one(reader, inputs)
    assert [r.value["N"] for r in decoded] == [row["OTHER"] for row in rows]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_value_without_payload_columns_is_no_value_both_ways(schema_registry, fmt):
    spec = _spec(fmt, {"ID": "STRING"})
    assert batches.encode_values(spec, [{}, {}]) == [encode_value(spec, {}), encode_value(spec, {})] == [None, None]
    inputs = _inputs([b"\x00\x00\x00\x03\xe7x", None])
    assert batches.decode_all(spec, inputs) == _decoded_one_by_one(spec, inputs)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_run_writes_with_the_schema_the_record_path_writes_with(schema_registry, fmt):
    """A sink subject that gains a version after the first record was written: both paths keep
    the writer's schema, so one topic never gets two schema ids from one task."""
    topic = f"r{uuid.uuid4().hex[:8]}"
    spec = _spec(fmt, SCALARS, topic)
    rows = _rows(8, SCALARS, converted=False)
    first = encode_value(spec, rows[0])
    batches.encode_values(_spec(fmt, {**SCALARS, "Z": "BIGINT"}, topic, register_schemas=True), [{**rows[0], "Z": 1}])
    values = batches.encode_values(spec, rows)
    assert values == _one_by_one_values(spec, rows) and values[0] == first


def test_protobuf_runs_parse_with_the_class_the_deserializer_parses_with(schema_registry):
    """A subject that gains a field after the reader's first record: the record path keeps the
    message class it made then, and so does a run."""
    topic = f"r{uuid.uuid4().hex[:8]}"
    reader = _spec("PROTOBUF", {**SCALARS, "X": "BIGINT"}, topic)
    old = batches.encode_values(_spec("PROTOBUF", SCALARS, topic), _rows(1, SCALARS, count=5, converted=False))
    inputs = _inputs(old)
    assert batches.decode_all(reader, inputs) == _decoded_one_by_one(reader, inputs)
    wider = {**SCALARS, "X": "BIGINT"}
    new = batches.encode_values(_spec("PROTOBUF", wider, topic, register_schemas=True),
                                [{**row, "X": 30} for row in _rows(2, SCALARS, count=5, converted=False)])
    inputs = _inputs(new)
    decoded = batches.decode_all(reader, inputs)
    assert decoded == _decoded_one_by_one(reader, inputs) and {r.value["X"] for r in decoded} == {None}


def test_a_run_writes_only_rows_the_serializer_writes(schema_registry):
    """A message the serializer cannot write (a nested one named by VALUE_SCHEMA_FULL_NAME): the
    run writes nothing either, and row by row says why."""
    topic = f"r{uuid.uuid4().hex[:8]}"
    proto = ('syntax = "proto3"; package p; message A { int64 X = 1; } '
             'message B { string S = 1; int64 N = 2; message C { string S = 1; int64 N = 2; } }')
    new_client(schema_registry).register_schema(f"{topic}-value", Schema(proto, "PROTOBUF"))
    spec = _spec("PROTOBUF", {"ID": "STRING", "S": "STRING", "N": "BIGINT"}, topic, schemas=SchemaRefs(value_name="p.B.C"))
    rows = [{"S": "a", "N": 1}, {"S": "b", "N": 2}]
    with pytest.raises(LookupError):
        encode_value(spec, rows[0])
    with pytest.raises(ValueError):
        batches.encode_values(spec, rows)


def test_a_registry_that_cannot_give_the_writers_schema_fails_the_write(schema_registry):
    """Not a dead letter per row: the query fails and Spark retries the batch."""
    spec = _spec("AVRO", SCALARS, schemas=SchemaRefs(value_id=987654))
    with pytest.raises(SchemaRegistryError):
        encode_value(spec, _rows(9, SCALARS, count=1)[0])


def test_a_json_schema_whose_reference_does_not_resolve_is_a_dead_letter(schema_registry):
    topic = f"r{uuid.uuid4().hex[:8]}"
    dangling = '{"type": "object", "properties": {"N": {"$ref": "#/definitions/missing"}}}'
    schema_id = new_client(schema_registry).register_schema(f"{topic}-value", Schema(dangling, "JSON"))
    spec = _spec("JSON_SR", {"ID": "STRING", "N": "BIGINT"}, topic)
    value = b"\x00" + schema_id.to_bytes(4, "big") + b'{"N": 1}'
    with pytest.raises(DecodeError, match="Unresolvable|PointerToNowhere|missing"):
        decode(spec, b"k", value, 0)
    assert batches.decode_all(spec, _inputs([value, value])) == [None, None]
