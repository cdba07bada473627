"""Runs of records decoded and encoded a column at a time (`streamjoin.serde.batches`) give what
`decode` and `encode_value` give record by record, whichever path a run takes."""

from __future__ import annotations

import json
from dataclasses import dataclass
from decimal import Decimal

import pytest

from streamjoin.runtime.contract import InputRow
from streamjoin.serde import batches
from streamjoin.serde.formats import DecodeError, SerdeSpec, decode, encode_key, encode_value

SPEC = SerdeSpec.of({"ID": "STRING", "AMOUNT": "BIGINT", "NAME": "STRING", "PRICE": "DECIMAL(5,2)"}, key=["ID"])


def row(value: bytes | None, key: bytes | None = b"k", offset: int = 0) -> InputRow:
    return InputRow("t", 0, offset, 1_000 + offset, key, value)


def one_by_one(spec: SerdeSpec, rows: list[InputRow]) -> list:
    """The reference: `decode` of each row, None where it raises DecodeError."""
    def attempt(r: InputRow):
        try:
            return decode(spec, r.key, r.value, r.ts, r.headers)
        except DecodeError:
            return None
    return list(map(attempt, rows))


@dataclass(frozen=True)
class Case:
    name: str
    values: tuple[bytes | None, ...]
    by_column: bool  # whether the run takes the column path (else record by record)


GOOD = b'{"AMOUNT": 1, "NAME": "a", "PRICE": 1.5}'
CASES = [
    Case("clean run", (GOOD, b'{"AMOUNT": null, "NAME": "b \\" q", "PRICE": 2, "extra": [1]}'), True),
    Case("numbers as text and any JSON in a STRING", (GOOD, b'{"AMOUNT": "7", "NAME": 12.50, "PRICE": "3.456"}'), True),
    Case("a field spelled in another case", (GOOD, b'{"amount": 2, "NAME": "a", "PRICE": 1}'), False),
    Case("a missing field", (GOOD, b'{"NAME": "a", "PRICE": 1}'), False),
    Case("not JSON", (GOOD, b'{"AMOUNT": 1,'), False),
    Case("not an object", (GOOD, b"[1]"), False),
    Case("text after the value", (GOOD, GOOD + b" x"), False),
    Case("whitespace around the value", (GOOD, b" " + GOOD + b"\n"), False),
    Case("a tombstone (decoded on its own)", (GOOD, None, GOOD), True),
    Case("a tombstone with a key that does not decode", (GOOD, None), True),
    Case("only tombstones", (None, None), False),
    Case("a value out of range", (GOOD, b'{"AMOUNT": 1e30, "NAME": "a", "PRICE": 1}'), False),
    Case("not UTF-8", (GOOD, b'{"AMOUNT": 1, "NAME": "\xff", "PRICE": 1}'), False),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_run_decodes_as_its_records_do(case: Case):
    bad_key = b"\xff" if "not decode" in case.name else b"k"  # (a tombstone's key: not UTF-8)
    rows = [row(v, offset=n, key=b"k" if v is not None else bad_key) for n, v in enumerate(case.values)]
    assert (batches._together(SPEC, rows) is not None) == case.by_column
    assert batches.decode_all(SPEC, rows) == one_by_one(SPEC, rows)


# Each record timed by a column of its row: Flink's rowtime (TIMESTAMP(3) text), ksqlDB's
# TIMESTAMP='col' (epoch ms, or text in its TIMESTAMP_FORMAT).
TIMED = [(SerdeSpec.of({"ID": "INT", "OT": "TIMESTAMP(3)"}, timestamp="OT"),
          [b'{"ID": 1, "OT": "1970-01-01 00:00:01.500"}', b'{"ID": 2, "OT": null}',
           b'{"ID": 4, "OT": "1970-01-01 10:00:00"}']),
         (SerdeSpec.of({"ID": "STRING", "T": "BIGINT"}, key=["ID"], timestamp="T"),
          [b'{"T": 1500}', b'{"T": null}', b'{"T": "7"}']),
         (SerdeSpec.of({"ID": "STRING", "T": "STRING"}, key=["ID"], timestamp="T", timestamp_format="yyyy-MM-dd HH:mm"),
          [b'{"T": "2026-11-30 21:40"}', b'{"T": "30.11.2026"}', b'{"T": null}'])]


@pytest.mark.parametrize("spec, values", TIMED, ids=["Flink rowtime", "ksqlDB epoch ms", "ksqlDB format"])
def test_a_run_is_timed_by_its_timestamp_column_as_its_records_are(spec: SerdeSpec, values: list[bytes]):
    """Column by column, a record whose time does not read (NULL, not a time) does not decode."""
    rows = [row(v, offset=n) for n, v in enumerate(values)]
    assert batches._together(spec, rows) is not None  # the column path takes the run
    decoded = batches.decode_all(spec, rows)
    assert decoded == one_by_one(spec, rows)
    assert decoded[1] is None and decoded[0].ts != rows[0].ts
    assert batches.decode_columns(spec, [r.key for r in rows], [r.value for r in rows]) is None  # times from rows


def test_keys_decode_with_their_own_format():
    rows = [row(GOOD, key=None), row(GOOD, key="ü".encode())]
    assert batches.decode_all(SPEC, rows) == one_by_one(SPEC, rows)
    assert [r.key for r in batches.decode_all(SPEC, rows)] == [None, ("ü",)]
    bad_key = [row(GOOD, key=b"\xff")]
    assert batches.decode_all(SPEC, bad_key) == [None]


def test_other_value_formats_decode_record_by_record():
    delimited = SerdeSpec.of({"ID": "STRING", "A": "INT", "B": "STRING"}, key=["ID"], value_format="DELIMITED")
    rows = [row(b"1,x"), row(b"nope,y"), row(b"3,")]
    assert batches.decode_all(delimited, rows) == one_by_one(delimited, rows)


VALUES = [{"AMOUNT": 1, "NAME": 'q " \\ \t ☃ 50%', "PRICE": Decimal("1.5")},
          {"AMOUNT": None, "NAME": None, "PRICE": None, "ID": "ignored"},
          {"AMOUNT": -2**63, "NAME": "", "PRICE": 2.25}]


def test_a_run_encodes_as_its_rows_do():
    encoded = batches.encode_values(SPEC, VALUES)
    assert encoded == [encode_value(SPEC, v) for v in VALUES]
    assert json.loads(encoded[0]) == {"AMOUNT": 1, "NAME": 'q " \\ \t ☃ 50%', "PRICE": 1.5}


@pytest.mark.parametrize("bad", [{"AMOUNT": 2**63, "NAME": "a", "PRICE": 1}, {"NAME": "no amount", "PRICE": 1}],
                         ids=["out of range", "missing column"])
def test_a_run_with_a_row_that_cannot_be_encoded_raises(bad):
    with pytest.raises((ValueError, LookupError)):
        batches.encode_values(SPEC, [VALUES[0], bad])


INT_KEY = SerdeSpec.of({"ID": "INT", "A": "INT"}, key=["ID"])
KEYS = [
    ("KAFKA STRING", SPEC, [None, (None,), ("x",), ("ü",)]),
    ("KAFKA INT", INT_KEY, [None, (7,), (-1,)]),
    ("JSON, one column", SerdeSpec.of({"ID": "STRING", "A": "INT"}, key=["ID"], key_format="JSON"), [("x",), (None,)]),
    ("JSON, two columns", SerdeSpec.of({"X": "INT", "Y": "STRING", "A": "INT"}, key=["X", "Y"], key_format="JSON"),
     [None, (1, "y"), (None, None)]),
    ("a bare value", SPEC, ["x", ("y",)]),
]


@pytest.mark.parametrize("spec, keys", [k[1:] for k in KEYS], ids=[k[0] for k in KEYS])
def test_keys_encode_as_one_by_one(spec, keys):
    assert batches.encode_keys(spec, keys) == [encode_key(spec, key) for key in keys]


def test_a_key_that_cannot_be_encoded_raises():
    with pytest.raises(ValueError):
        batches.encode_keys(INT_KEY, [(1,), (2**40,)])


def test_other_value_formats_encode_row_by_row():
    bare = SerdeSpec.of({"ID": "STRING", "A": "INT"}, key=["ID"], wrap_single_value=False)
    rows = [{"A": 1}, {"A": -5}]
    assert batches.encode_values(bare, rows) == [encode_value(bare, r) for r in rows] == [b"1", b"-5"]
