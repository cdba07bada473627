"""A run of results encoded as the sink's records at once (`PipelineRuntime._encode` is the
same, one result at a time, and says why one cannot be encoded)."""

from __future__ import annotations

from datetime import datetime
from itertools import repeat
from typing import TYPE_CHECKING, Any

from streamjoin.operators.base import RowKind
from streamjoin.runtime.contract import Emitted
from streamjoin.runtime.records import DATA_ERRORS
from streamjoin.runtime.stages import Event
from streamjoin.serde.batches import encode_keys, encode_values
from streamjoin.serde.time import datetime_to_millis

_DELETE = RowKind.DELETE

if TYPE_CHECKING:
    from streamjoin.runtime.bindings import SinkBinding


def encode_events(sink: SinkBinding, events: list[Event],
                  values: list[dict | None] | None = None) -> list[Emitted] | None:
    """The sink records of `events`, without headers (a deletion, as `PipelineRuntime._encode`
    takes it, is a tombstone of its key); None when any one cannot be encoded (the caller then
    encodes them one by one). `values`: the rows `sink.value` would give (None for a deletion),
    or rows holding at least their columns, when the caller has them."""
    try:
        deleted = [event.env is None or (event.kind is _DELETE and not sink.emit_retractions) for event in events]
        some_deleted = any(deleted)
        if values is None:
            values = [None if gone else sink.value(event.env) for event, gone in zip(events, deleted)]
        keys = [event.key if event.env is None else sink.key(event.env) for event in events] if sink.key \
            else [event.key for event in events]
        if sink.timestamp_column is None:
            times = [event.ts for event in events]
        else:
            times = [event.ts if gone else record_millis(value[sink.timestamp_column])
                     for event, gone, value in zip(events, deleted, values)]
        serde = sink.serde
        key_bytes = encode_keys(serde, keys)
        if some_deleted:
            if any(key is None for key, gone in zip(key_bytes, deleted) if gone):
                return None  # one by one, it becomes a dead letter
            written = iter(encode_values(serde, [value for value, gone in zip(values, deleted) if not gone]))
            value_bytes = [None if gone else next(written) for gone in deleted]
        else:
            value_bytes = encode_values(serde, values)
    except DATA_ERRORS:
        return None
    return list(map(Emitted._make, zip(repeat(sink.topic), key_bytes, value_bytes, times, repeat(()))))


def record_millis(value: Any) -> int:
    """A result's TIMESTAMP column as its record time."""
    if value is None:
        raise ValueError("the TIMESTAMP column of the result is NULL")
    return datetime_to_millis(value) if isinstance(value, datetime) else int(value)
