"""Changelog value formats written by CDC tools (Flink's `debezium-json`, `canal-json`,
`maxwell-json`): each record is one row change of a database table, in an envelope that says
what happened (insert, update, delete), holds the row (and, for an update, what it was before)
and carries metadata about the change (when the database made it, when the tool read it, which
database and table). `streamjoin.serde.formats` types the row and fills metadata columns; this
module only takes the envelopes apart.

A record becomes one change of one key: an insert or update is the row's new state, a delete
is the deleted row (its key). Envelopes the formats define that are not one row change are
rejected with the reason (they go to the dead letters): a Canal message with several rows, a
DDL or other non-row event, an update that moves a row to another key.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, NamedTuple

from streamjoin.dialect.formats import FORMAT_METADATA
from streamjoin.serde.codecs import load_json
from streamjoin.serde.values import DecodeError, hashable, json_reader, struct_reader


class Change(NamedTuple):
    deleted: bool  # a delete: `row` is the deleted row
    row: Mapping[str, Any]  # the row's fields as the envelope writes them (new state, or the deleted row)
    before: Mapping[str, Any] | None  # an update's earlier row (Canal and Maxwell: only its changed fields)
    metadata: dict[str, Any]  # metadata key -> the envelope's raw value (None when absent)


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise DecodeError(f"value: {what} is not a JSON object (got {type(value).__name__})")
    return value


def debezium(message: Any) -> Change:
    """Debezium: `op` c (create), r (snapshot read), u (update) or d (delete), the row in
    `after` (`before` for a delete), `source.ts_ms` when the database made the change, `ts_ms`
    when Debezium read it. With a JSON converter's schemas on, the envelope is under `payload`."""
    message = _object(message, "a Debezium message")
    if "op" not in message and isinstance(message.get("payload"), dict):
        message = message["payload"]
    op = message.get("op")
    source = message.get("source") if isinstance(message.get("source"), dict) else {}
    metadata = {"value.source.timestamp": source.get("ts_ms"), "value.ingestion-timestamp": message.get("ts_ms"),
                "value.source.database": source.get("db"), "value.source.schema": source.get("schema"),
                "value.source.table": source.get("table")}
    if op in ("c", "r", "u"):
        before = message.get("before") if op == "u" else None
        return Change(False, _object(message.get("after"), f"the 'after' row of a Debezium {op!r} change"),
                      before if isinstance(before, dict) else None, metadata)
    if op == "d":
        before = message.get("before")
        if not isinstance(before, dict):
            raise DecodeError("value: a Debezium delete without its 'before' row: the key it deletes is unknown "
                              "(the source table must log whole rows, e.g. PostgreSQL REPLICA IDENTITY FULL)")
        return Change(True, before, None, metadata)
    raise DecodeError(f"value: Debezium operation {op!r} is not a row change (c, r, u or d)")


def canal(message: Any) -> Change:
    """Canal: `type` INSERT, UPDATE or DELETE, the rows in `data` and an update's changed fields'
    earlier values in `old`; `es` when the database made the change, `ts` when Canal read it."""
    message = _object(message, "a Canal message")
    kind = str(message.get("type", "")).upper()
    if kind not in ("INSERT", "UPDATE", "DELETE"):
        raise DecodeError(f"value: Canal event type {message.get('type')!r} is not a row change (INSERT, UPDATE "
                          "or DELETE)")
    rows = message.get("data")
    if not isinstance(rows, list) or len(rows) != 1:
        count = len(rows) if isinstance(rows, list) else "no"
        raise DecodeError(f"value: a Canal message with {count} rows in 'data': one row per message is read")
    old = message.get("old")
    before = old[0] if kind == "UPDATE" and isinstance(old, list) and old and isinstance(old[0], dict) else None
    metadata = {"value.event-timestamp": message.get("es"), "value.ingestion-timestamp": message.get("ts"),
                "value.database": message.get("database"), "value.table": message.get("table")}
    return Change(kind == "DELETE", _object(rows[0], "a Canal row"), before, metadata)


def maxwell(message: Any) -> Change:
    """Maxwell: `type` insert, update or delete, the row in `data`, an update's changed fields'
    earlier values in `old`, `ts` when Maxwell read the change, in seconds."""
    message = _object(message, "a Maxwell message")
    kind = message.get("type")
    if kind not in ("insert", "update", "delete"):
        raise DecodeError(f"value: Maxwell event type {kind!r} is not a row change (insert, update or delete)")
    seconds = message.get("ts")
    metadata = {"value.ingestion-timestamp": seconds * 1000 if isinstance(seconds, (int, float)) else None,
                "value.database": message.get("database"), "value.table": message.get("table")}
    before = message.get("old") if kind == "update" and isinstance(message.get("old"), dict) else None
    return Change(kind == "delete", _object(message.get("data"), "a Maxwell row"), before, metadata)


READERS: dict[str, Callable[[Any], Change]] = {"DEBEZIUM-JSON": debezium, "CANAL-JSON": canal,
                                                "MAXWELL-JSON": maxwell}


def earlier_row(change: Change) -> Mapping[str, Any] | None:
    """An update's whole earlier row: Canal and Maxwell write only the changed fields' old values."""
    return None if change.before is None else {**change.row, **change.before}


class ChangeReader:
    """bytes -> (key, {payload and metadata column: value}, deleted) for one SerdeSpec with a
    changelog value format: the row typed by the spec's key and payload columns, the metadata
    columns from the envelope."""

    def __init__(self, spec) -> None:
        self.read_change = READERS[spec.value_format]
        self.read_row = struct_reader(spec.key_columns + spec.payload_columns, path="value")
        self.key_names = [name for name, _ in spec.key_columns]
        self.payload_names = [name for name, _ in spec.payload_columns]
        types = dict(spec.value_columns)
        envelope = FORMAT_METADATA[spec.value_format]
        self.metadata = [(name, key, json_reader(types[name]), f"value.{name}") for name, key in spec.metadata_columns
                         if key in envelope]

    def __call__(self, data: bytes) -> tuple[tuple, dict, bool]:
        change = self.read_change(load_json(data, "value"))
        row = self.read_row(change.row, "value")
        key = tuple(hashable(row[name]) for name in self.key_names)
        if None in key:
            raise DecodeError(f"value: the row's key {dict(zip(self.key_names, key))} has a NULL column")
        before = earlier_row(change)
        if before is not None:
            earlier = self.read_row(before, "value")
            moved = tuple(earlier[name] for name in self.key_names)
            if moved != key:
                raise DecodeError(f"value: an update that moves a row from key {moved} to {key} is not read (one "
                                  "record is one change of one key)")
        value = {name: row[name] for name in self.payload_names}
        for name, key_name, read, path in self.metadata:
            raw = change.metadata.get(key_name)
            value[name] = None if raw is None else read(raw, path)
        return key, value, change.deleted
