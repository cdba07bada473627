"""Flink's changelog value formats (`streamjoin.serde.changelog` through `decode`): each format's
inserts, updates and deletes become one change of one key (the row, or a deletion with the
deleted row's time), metadata columns come from the envelope, and a record that is not one row
change is a DecodeError with the reason."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any, NamedTuple

import pytest

from streamjoin.dialect.formats import FormatError
from streamjoin.serde.formats import DecodeError, DecodedRecord, SerdeSpec, decode

COLUMNS = {"id": "INT", "name": "STRING", "price": "DECIMAL(10, 2)", "changed": "TIMESTAMP(3)", "read": "TIMESTAMP(3)",
           "db": "STRING"}
CHANGED = {"DEBEZIUM-JSON": "value.source.timestamp", "CANAL-JSON": "value.event-timestamp"}
DB = {"DEBEZIUM-JSON": "value.source.database", "CANAL-JSON": "value.database", "MAXWELL-JSON": "value.database"}


def spec(fmt: str, timestamp: str | None = None) -> SerdeSpec:
    metadata = (("read", "value.ingestion-timestamp"), ("db", DB[fmt])) + \
        ((("changed", CHANGED[fmt]),) if fmt in CHANGED else ())
    columns = COLUMNS if fmt in CHANGED else {k: v for k, v in COLUMNS.items() if k != "changed"}
    return SerdeSpec.of(columns, key=["id"], key_format=fmt, value_format=fmt, timestamp=timestamp,
                        metadata_columns=metadata)


def at(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


def debezium(op: str, before: dict | None, after: dict | None, **extra: Any) -> dict:
    return {"before": before, "after": after, "op": op, "ts_ms": 9_000,
            "source": {"ts_ms": 5_000, "db": "shop", "table": "products"}, **extra}


def canal(kind: str, data: list | None, old: list | None = None) -> dict:
    return {"data": data, "old": old, "type": kind, "database": "shop", "table": "products", "es": 5_000,
            "ts": 9_000, "isDdl": False, "pkNames": ["id"]}


def maxwell(kind: str, data: dict, old: dict | None = None) -> dict:
    return {"database": "shop", "table": "products", "type": kind, "ts": 9, "data": data, "old": old}


A = {"id": 1, "name": "scooter", "price": 11.11}
B = {"id": 1, "name": "scooter", "price": 12.99}
ROW_A = {"name": "scooter", "price": Decimal("11.11")}
ROW_B = {"name": "scooter", "price": Decimal("12.99")}
WITH_TIMES = {"changed": at(5_000), "read": at(9_000), "db": "shop"}
MAXWELL_META = {"read": at(9_000), "db": "shop"}


class Case(NamedTuple):
    fmt: str
    message: Any  # the JSON value (None: no value bytes)
    expected: DecodedRecord


CASES = {
    "debezium create": Case("DEBEZIUM-JSON", debezium("c", None, A), DecodedRecord((1,), {**ROW_A, **WITH_TIMES}, 1)),
    "debezium snapshot read": Case("DEBEZIUM-JSON", debezium("r", None, A), DecodedRecord((1,), {**ROW_A, **WITH_TIMES}, 1)),
    "debezium update": Case("DEBEZIUM-JSON", debezium("u", A, B), DecodedRecord((1,), {**ROW_B, **WITH_TIMES}, 1)),
    "debezium delete": Case("DEBEZIUM-JSON", debezium("d", B, None), DecodedRecord((1,), None, 1)),
    "debezium with its schema": Case("DEBEZIUM-JSON", {"schema": {"type": "struct"}, "payload": debezium("c", None, A)},
                                     DecodedRecord((1,), {**ROW_A, **WITH_TIMES}, 1)),
    "debezium compaction tombstone": Case("DEBEZIUM-JSON", None, DecodedRecord(None, None, 1)),
    "canal insert": Case("CANAL-JSON", canal("INSERT", [A]), DecodedRecord((1,), {**ROW_A, **WITH_TIMES}, 1)),
    "canal update, old has the changed fields": Case("CANAL-JSON", canal("UPDATE", [B], [{"price": 11.11}]),
                                                     DecodedRecord((1,), {**ROW_B, **WITH_TIMES}, 1)),
    "canal delete": Case("CANAL-JSON", canal("DELETE", [B]), DecodedRecord((1,), None, 1)),
    "canal text values": Case("CANAL-JSON", canal("INSERT", [{"id": "1", "name": "scooter", "price": "11.11"}]),
                              DecodedRecord((1,), {**ROW_A, **WITH_TIMES}, 1)),
    "maxwell insert": Case("MAXWELL-JSON", maxwell("insert", A), DecodedRecord((1,), {**ROW_A, **MAXWELL_META}, 1)),
    "maxwell update": Case("MAXWELL-JSON", maxwell("update", B, {"price": 11.11}),
                           DecodedRecord((1,), {**ROW_B, **MAXWELL_META}, 1)),
    "maxwell delete": Case("MAXWELL-JSON", maxwell("delete", B), DecodedRecord((1,), None, 1)),
}


def encoded(message: Any) -> bytes | None:
    return None if message is None else json.dumps(message).encode()


@pytest.mark.parametrize("name", CASES)
def test_a_change_becomes_its_keys_new_row_or_deletion(name):
    case = CASES[name]
    assert decode(spec(case.fmt), b"ignored", encoded(case.message), 1) == case.expected


@pytest.mark.parametrize("fmt, message, ts", [
    ("DEBEZIUM-JSON", debezium("c", None, A), 5_000),  # the database's time, not the record's
    ("DEBEZIUM-JSON", debezium("d", A, None), 5_000),  # a deletion at the deleted row's change time
    ("CANAL-JSON", canal("DELETE", [A]), 5_000),
])
def test_the_event_time_is_a_metadata_column(fmt, message, ts):
    assert decode(spec(fmt, timestamp="changed"), None, encoded(message), 1).ts == ts


BAD = {
    "debezium delete without before": (debezium("d", None, None), "DEBEZIUM-JSON", "without its 'before' row"),
    "debezium truncate": (debezium("t", None, None), "DEBEZIUM-JSON", "operation 't' is not a row change"),
    "debezium update moving the key": (debezium("u", A, {**B, "id": 2}), "DEBEZIUM-JSON", "moves a row from key (1,)"),
    "debezium row of the wrong type": (debezium("c", None, {**A, "price": "x"}), "DEBEZIUM-JSON", "value.price"),
    "debezium row without its key": (debezium("c", None, {"name": "a"}), "DEBEZIUM-JSON", "NULL column"),
    "not JSON": (b"{", "DEBEZIUM-JSON", "not valid JSON"),
    "canal DDL": (canal("CREATE", None), "CANAL-JSON", "'CREATE' is not a row change"),
    "canal with two rows": (canal("INSERT", [A, B]), "CANAL-JSON", "2 rows"),
    "maxwell bootstrap marker": (maxwell("bootstrap-start", {}), "MAXWELL-JSON", "'bootstrap-start' is not a row change"),
}


@pytest.mark.parametrize("name", BAD)
def test_a_record_that_is_not_one_row_change_says_why(name):
    message, fmt, reason = BAD[name]
    with pytest.raises(DecodeError) as caught:
        decode(spec(fmt), None, message if isinstance(message, bytes) else encoded(message), 1)
    assert reason in str(caught.value)


@pytest.mark.parametrize("build, reason", [
    (lambda: SerdeSpec.of({"id": "INT", "v": "STRING"}, key=["id"], key_format="KAFKA", value_format="DEBEZIUM-JSON"),
     "key format is DEBEZIUM-JSON too"),
    (lambda: SerdeSpec.of({"v": "STRING"}, key_format="CANAL-JSON", value_format="CANAL-JSON"), "needs key columns"),
    (lambda: SerdeSpec.of({"id": "INT", "t": "INT"}, key=["id"], key_format="MAXWELL-JSON", value_format="MAXWELL-JSON",
                          metadata_columns=(("t", "value.ingestion-timestamp"),)), "not INT"),
    (lambda: SerdeSpec.of({"id": "INT", "t": "STRING"}, key=["id"], value_format="JSON",
                          metadata_columns=(("t", "value.database"),)), "not available with value format JSON"),
])
def test_specs_that_cannot_work_are_rejected(build, reason):
    with pytest.raises((FormatError, ValueError)) as caught:
        build()
    assert reason in str(caught.value)
