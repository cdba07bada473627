"""A case's records on the wire: encode inputs for their source topic, decode sink records."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streamjoin.formats import SerdeSpec, decode, encode_key, encode_value
from streamjoin.kafka.murmur2 import default_partition
from streamjoin.kafka.records import ConsumedRecord, OutRecord, dedupe_replayed
from streamjoin.runner.compare import OutputRecord


@dataclass(frozen=True)
class Placed:
    """An input record encoded and assigned its partition (as Kafka's default partitioner
    would), so the runner knows which task will see it before producing it."""

    topic: str
    partition: int
    record: OutRecord


def place(topic: str, partitions: int, serde: SerdeSpec, key: Any, value: Any, ts: int,
          sequence: int, headers=()) -> Placed:
    key_bytes = None if key is None or not serde.key_columns else encode_key(serde, _key_tuple(serde, key))
    value_bytes = None if value is None else encode_value(serde, _value_row(serde, value, ts))
    partition = sequence % partitions if key_bytes is None else default_partition(key_bytes, partitions)
    return Placed(topic, partition, OutRecord(key_bytes, value_bytes, ts, tuple(headers), partition))


def _key_tuple(serde: SerdeSpec, key: Any) -> tuple:
    if isinstance(key, dict):
        folded = {str(k).lower(): v for k, v in key.items()}
        return tuple(folded.get(name.lower()) for name, _ in serde.key_columns)
    if isinstance(key, (list, tuple)):
        return tuple(key)
    return (key,)


def _value_row(serde: SerdeSpec, value: Any, ts: int) -> dict:
    if isinstance(value, dict):
        # A virtual event-time column (Flink METADATA ... VIRTUAL) is absent: it is the record ts.
        missing_time = serde.timestamp_column and serde.timestamp_column not in value
        return {**value, serde.timestamp_column: ts} if missing_time else value
    # An unwrapped single-column value.
    (name, _), = serde.payload_columns
    return {name: value}


def decode_output(records: list[ConsumedRecord], serde: SerdeSpec) -> list[OutputRecord]:
    """Sink records in partition then offset order, replayed copies dropped, decoded."""
    ordered = sorted(records, key=lambda r: (r.partition, r.offset))
    out = []
    for r in dedupe_replayed(ordered):
        decoded = decode(serde, r.key, r.value, r.timestamp_ms)
        key = None if decoded.key is None else (decoded.key[0] if len(decoded.key) == 1 else
                                                dict(zip((n for n, _ in serde.key_columns), decoded.key)))
        out.append(OutputRecord(r.topic, r.partition, r.offset, r.timestamp_ms, key, _plain(decoded.value)))
    return out


def _plain(value: dict | None) -> Any:
    if value is None:
        return None
    return {k: _timestamp_text(v) for k, v in value.items()}


def _timestamp_text(v: Any) -> Any:
    """Timestamps compare in the cases' text form 'YYYY-MM-DD HH:MM:SS.fff' (UTC)."""
    if hasattr(v, "strftime") and hasattr(v, "microsecond"):
        return v.strftime("%Y-%m-%d %H:%M:%S.") + f"{v.microsecond // 1000:03d}"
    return v


def misplaced(records: list[ConsumedRecord], partitions: int) -> list[str]:
    """Records whose partition is not Kafka's default partition of their key bytes."""
    return [f"key {r.key!r} in partition {r.partition}, murmur2 says {default_partition(r.key, partitions)}"
            for r in records if r.key is not None and r.partition != default_partition(r.key, partitions)]
