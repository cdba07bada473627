"""A run of results encoded as the sink's records at once (`PipelineRuntime._encode` is the
same, one result at a time, and says why one cannot be encoded)."""

from __future__ import annotations

from datetime import datetime
from itertools import repeat
from typing import TYPE_CHECKING, Any

from streamjoin.runtime.contract import Emitted
from streamjoin.runtime.records import DATA_ERRORS
from streamjoin.runtime.stages import Event
from streamjoin.serde.batches import encode_keys, encode_values
from streamjoin.serde.time import datetime_to_millis

if TYPE_CHECKING:
    from streamjoin.runtime.bindings import SinkBinding


def encode_events(sink: SinkBinding, events: list[Event], values: list[dict] | None = None) -> list[Emitted] | None:
    """The sink records of `events` (each with a row: no deletions), without headers; None when
    any one cannot be encoded (the caller then encodes them one by one). `values`: the rows
    `sink.value` would give, or rows holding at least their columns, when the caller has them."""
    try:
        envs = [event.env for event in events]
        if values is None:
            values = [sink.value(env) for env in envs]
        keys = [sink.key(env) for env in envs] if sink.key else [event.key for event in events]
        if sink.timestamp_column is None:
            times = [event.ts for event in events]
        else:
            times = [record_millis(value[sink.timestamp_column]) for value in values]
        serde = sink.serde
        key_bytes = encode_keys(serde, keys)
        value_bytes = encode_values(serde, values)
    except DATA_ERRORS:
        return None
    return list(map(Emitted._make, zip(repeat(sink.topic), key_bytes, value_bytes, times, repeat(()))))


def record_millis(value: Any) -> int:
    """A result's TIMESTAMP column as its record time."""
    if value is None:
        raise ValueError("the TIMESTAMP column of the result is NULL")
    return datetime_to_millis(value) if isinstance(value, datetime) else int(value)
