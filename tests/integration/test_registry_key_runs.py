"""Runs of AVRO, PROTOBUF and JSON_SR keys, and of whole values (one column, not wrapped in a
record), read and written together (serde.registry_runs through serde.batches) give what the
serializers give key by key and record by record, against the session's schema registry: keys of
one column (bare, as ksqlDB writes them, or wrapped), of two columns, nested; NULL keys and keys
with NULL parts; damaged keys among good ones. No broker and no Spark."""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from decimal import Decimal

import pytest
from confluent_kafka.schema_registry import Schema

from streamjoin.runtime.contract import InputRow
from streamjoin.serde import batches
from streamjoin.serde.formats import DecodeError, SerdeSpec, _codec, decode, encode_key, encode_value
from streamjoin.serde.registry_codecs import new_client
from tests.integration.test_registry_runs import DAMAGES, FORMATS, SCALARS, _decoded_one_by_one, _rows, _value

pytestmark = pytest.mark.integration
VALUES = {name: kind for name, kind in SCALARS.items() if name != "ID"}


@dataclass(frozen=True)
class Case:
    name: str
    key: dict  # key column -> type
    wrapped: bool = False  # a single key column written inside a record (Flink's rows)
    takes_runs: frozenset = frozenset(FORMATS)  # the formats whose runs take this key


KEYS = [
    Case("bare string", {"K": "STRING"}),
    Case("bare bigint", {"K": "BIGINT"}),
    # AVRO: a schema that is `bytes` keeps the serializers' own handling
    Case("bare decimal", {"K": "DECIMAL(6,2)"}, takes_runs=frozenset({"PROTOBUF", "JSON_SR"})),
    Case("wrapped string", {"K": "STRING"}, wrapped=True),
    Case("two columns", {"K": "STRING", "K2": "INT"}),
    # PROTOBUF's repeated field keeps the record path
    Case("bare array", {"K": "ARRAY<STRING>"}, takes_runs=frozenset({"AVRO", "JSON_SR"})),
]
CASES = [(fmt, case) for fmt in FORMATS for case in KEYS]


def _spec(fmt: str, case: Case, topic: str | None = None) -> SerdeSpec:
    return SerdeSpec.of({**case.key, **VALUES}, key=list(case.key), key_format=fmt, value_format=fmt,
                        topic=topic or f"k{uuid.uuid4().hex[:8]}", wrap_single_key=case.wrapped)


def _keys(seed: int, case: Case, count: int = 40) -> list:
    """Key tuples: NULL keys, keys with NULL parts, keys with none."""
    rng = random.Random(seed)
    keys = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.1:
            keys.append(None)
        elif roll < 0.15:
            keys.append(tuple(None for _ in case.key))
        else:
            keys.append(tuple(_value(rng, kind, refused=False, converted=False) for kind in case.key.values()))
    return keys


def _key_runs(spec: SerdeSpec):
    return _codec(spec).write_key_columns.__self__  # the spec's key SideRuns


def _inputs(keys: list, values: list) -> list[InputRow]:
    return [InputRow("t", 0, n, 1_000 + n, key, value) for n, (key, value) in enumerate(zip(keys, values))]


@pytest.mark.parametrize("fmt, case", CASES, ids=[f"{f}-{c.name}" for f, c in CASES])
def test_a_run_of_keys_encodes_and_decodes_as_each_key_does(schema_registry, fmt, case):
    spec = _spec(fmt, case)
    keys = _keys(len(case.name), case)
    encoded = batches.encode_keys(spec, keys)
    assert encoded == [encode_key(spec, key) for key in keys]
    assert (_key_runs(spec).write_plan is not None) == (fmt in case.takes_runs)
    assert None in encoded and len({k for k in encoded if k is not None}) > 5  # NULL keys, and many others
    values = batches.encode_values(spec, _rows(3, VALUES, count=len(keys), converted=False))
    inputs = _inputs(encoded, values)
    decoded = batches.decode_all(spec, inputs)
    assert decoded == _decoded_one_by_one(spec, inputs)
    assert all(record is not None for record in decoded)
    assert batches.decode_columns(spec, encoded, values) is not None  # (keys one by one where runs decline)
    plans = _codec(spec).read_key_columns.__self__.read_plans
    assert any(plan is not None for plan in plans.values()) == (fmt in case.takes_runs)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("damage", [d[1] for d in DAMAGES if d[0] != "no value"],
                         ids=[d[0] for d in DAMAGES if d[0] != "no value"])
def test_damaged_keys_among_good_ones_decode_as_they_do_decoded_one_by_one(schema_registry, fmt, damage):
    spec = _spec(fmt, KEYS[4])  # two columns
    keys = batches.encode_keys(spec, [("k", n) for n in range(40)])
    for at in (5, 17, 39):  # (the first key of a schema id goes through the deserializer itself)
        keys[at] = damage(keys[at])
    values = batches.encode_values(spec, _rows(5, VALUES, converted=False))
    inputs = _inputs(keys, values)
    decoded = batches.decode_all(spec, inputs)
    assert decoded == _decoded_one_by_one(spec, inputs)
    assert decoded[1] is not None


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_key_run_that_cannot_be_written_fails_as_its_first_bad_key_does(schema_registry, fmt):
    spec = _spec(fmt, Case("bare bigint", {"K": "BIGINT"}))
    keys = [(n,) for n in range(10)] + [("not a number",), ("nor this",)]
    with pytest.raises(ValueError) as one:
        encode_key(spec, keys[-2])
    with pytest.raises(ValueError) as run:
        batches.encode_keys(spec, keys)
    assert str(run.value) == str(one.value) and type(run.value) is type(one.value)
    assert batches.encode_keys(spec, keys[:-2]) == [encode_key(spec, key) for key in keys[:-2]]


UNWRAPPED = {"ID": "STRING", "N": "BIGINT"}


@pytest.mark.parametrize("fmt", ["AVRO", "JSON_SR"])
def test_unwrapped_single_values_are_whole_values_both_ways(schema_registry, fmt):
    """WRAP_SINGLE_VALUE=false: each value is the column's alone; a NULL one is no value at all."""
    spec = SerdeSpec.of(UNWRAPPED, key=["ID"], value_format=fmt, topic=f"w{uuid.uuid4().hex[:8]}",
                        wrap_single_value=False)
    rows = _rows(6, {"N": "BIGINT"}, converted=False)
    values = batches.encode_values(spec, rows)
    assert values == [encode_value(spec, row) for row in rows] and None in values
    assert _codec(spec).write_columns.__self__.write_plan is not None  # written as a run
    present = [value for value in values if value is not None]
    inputs = [InputRow("t", 0, n, n, b"k", value) for n, value in enumerate(values)]
    assert batches.decode_all(spec, inputs) == _decoded_one_by_one(spec, inputs)
    assert batches.decode_columns(spec, [b"k"] * len(present), present) is not None


def test_a_bare_avro_decimal_key_is_avros_encoding_of_it_and_reads_back(schema_registry):
    """confluent-kafka writes a schema that is `bytes` as raw bytes; a DECIMAL key is written as
    Avro encodes the decimal (its length, then its unscaled value's two's complement), as ksqlDB's
    Java serializer writes it."""
    spec = _spec("AVRO", Case("bare decimal", {"K": "DECIMAL(6,2)"}))
    key = encode_key(spec, (Decimal("12.34"),))
    assert key[5:] == bytes([4, 0x04, 0xD2])  # 2 bytes (zigzag 4), 1234
    assert decode(spec, key, None, 0).key == (Decimal("12.34"),)
    with pytest.raises(DecodeError, match="not an AVRO decimal"):
        decode(spec, key[:5] + b"\x0a", None, 0)  # 5 bytes announced, none there


def test_a_bare_avro_decimal_key_reads_with_its_writers_scale(schema_registry):
    """A subject whose decimal has another scale than the column: written and read with it."""
    topic = f"k{uuid.uuid4().hex[:8]}"
    schema = '{"type": "bytes", "logicalType": "decimal", "precision": 8, "scale": 4}'
    new_client(schema_registry).register_schema(f"{topic}-key", Schema(schema, "AVRO"))
    spec = _spec("AVRO", Case("bare decimal", {"K": "DECIMAL(6,2)"}), topic)
    key = encode_key(spec, (Decimal("12.34"),))
    assert key[5:] == bytes([6, 0x01, 0xE2, 0x08])  # 3 bytes (zigzag 6), 123400
    assert decode(spec, key, None, 0).key == (Decimal("12.34"),)
