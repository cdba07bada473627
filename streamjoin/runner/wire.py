"""A case's sink records read back: decoded for comparison, checked for their partition."""

from __future__ import annotations

import base64
from typing import Any

from streamjoin.kafka.murmur2 import default_partition
from streamjoin.kafka.records import ConsumedRecord, dedupe_replayed
from streamjoin.runner.compare import OutputRecord
from streamjoin.runtime.contract import without_replay_header
from streamjoin.serde.formats import SerdeSpec, decode


def decode_output(records: list[ConsumedRecord], serde: SerdeSpec) -> list[OutputRecord]:
    """Sink records in partition then offset order, replayed copies dropped, decoded."""
    ordered = sorted(records, key=lambda r: (r.partition, r.offset))
    out = []
    for r in dedupe_replayed(ordered):
        decoded = decode(serde, r.key, r.value, r.timestamp_ms)
        parts, window = decoded.key, None
        if parts is not None and serde.window is not None:
            parts, window = parts[:-2], parts[-2:]
        # a PROTOBUF key is a message: an object of its fields, one column or several
        key = None if parts is None else (parts[0] if len(parts) == 1 and serde.key_format != "PROTOBUF" else
                                          dict(zip((n for n, _ in serde.key_columns), parts)))
        value = _plain(decoded.value, serde)
        if serde.key_format == "DELIMITED" and r.key is not None and window is None:
            key = r.key.decode("utf-8")  # DELIMITED compares as its text (the suites' rule)
        if serde.value_format == "DELIMITED" and r.value is not None:
            value = r.value.decode("utf-8")
        out.append(OutputRecord(r.topic, r.partition, r.offset, r.timestamp_ms, key, value,
                                window, serde.window, without_replay_header(tuple(r.headers))))
    return out


def _plain(value: dict | None, serde: SerdeSpec) -> Any:
    if value is None:
        return None
    plain = {k: _as_text(v) for k, v in value.items()}
    unwrapped = not serde.wrap_single_value and len(serde.payload_columns) == 1
    return next(iter(plain.values())) if unwrapped else plain  # a bare single value, as written


def _as_text(v: Any) -> Any:
    """Values compare in the cases' text forms: timestamps as 'YYYY-MM-DD HH:MM:SS.fff' (UTC),
    BYTES in base64 (as JSON carries them), also inside arrays, maps and structs."""
    if hasattr(v, "strftime") and hasattr(v, "microsecond"):
        return v.strftime("%Y-%m-%d %H:%M:%S.") + f"{v.microsecond // 1000:03d}"
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, dict):
        return {k: _as_text(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_as_text(x) for x in v]
    return v


def misplaced(records: list[ConsumedRecord], partitions: int) -> list[str]:
    """Records whose partition is not Kafka's default partition of their key bytes."""
    return [f"key {r.key!r} in partition {r.partition}, murmur2 says {default_partition(r.key, partitions)}"
            for r in records if r.key is not None and r.partition != default_partition(r.key, partitions)]
