"""Record shapes exchanged with Kafka, the replay header that makes the at-least-once sink's
duplicates detectable by readers, and `place`: a row encoded for its topic, with the partition
Kafka's default partitioner gives it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from streamjoin.kafka.murmur2 import default_partition
from streamjoin.runtime.contract import REPLAY_HEADER

if TYPE_CHECKING:
    from streamjoin.serde.formats import SerdeSpec

# REPLAY_HEADER: the header the Kafka sink adds to every record, "<writer id>:<batch id>:<task>.<seq>".
# A replayed micro-batch re-produces exactly the same ids, so a reader keeps the first copy of each id.
# A query's writer id is "<query>@<epoch>", the epoch minted with its checkpoint: ids never repeat
# across queries sharing a topic, nor across a query's resets (`spark.query.replay_writer_id`).

Headers = Sequence[tuple[str, bytes | None]]


@dataclass(frozen=True)
class OutRecord:
    """A record to produce. partition=None: Kafka's default partitioner (murmur2 of the key)."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None = None
    headers: Headers = field(default_factory=tuple)
    partition: int | None = None


@dataclass(frozen=True)
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    timestamp_type: int
    headers: Headers

    def header(self, name: str) -> bytes | None:
        """The last header called `name` (a writer that sets a header again appends it)."""
        return next((value for key, value in reversed(self.headers) if key == name), None)


def dedupe_replayed(records: Iterable[ConsumedRecord]) -> Iterator[ConsumedRecord]:
    """Drop records whose REPLAY_HEADER id was already seen (the copies a replayed sink batch
    wrote again); records without the header pass through. Feed records in offset order."""
    seen: set[bytes] = set()
    for record in records:
        replay_id = record.header(REPLAY_HEADER)
        if replay_id is not None:
            if replay_id in seen:
                continue
            seen.add(replay_id)
        yield record


@dataclass(frozen=True)
class Placed:
    """An input record encoded and assigned its partition (as Kafka's default partitioner
    would), so the runner knows which task will see it before producing it."""

    topic: str
    partition: int
    record: OutRecord


def place(topic: str, partitions: int, serde: SerdeSpec, key: Any, value: Any, ts: int,
          sequence: int, headers=(), window: tuple[int, int] | None = None) -> Placed:
    """`window`: (start, end) of a windowed key."""
    # Imported here: serde brings the SQL dialect (sqlglot), which OutRecord's users (the sink's
    # kafka-python fallback) do not need; a caller of `place` holds a SerdeSpec, so it is loaded.
    from streamjoin.serde.formats import encode_key, encode_value

    key_parts = None if key is None or not serde.key_columns else _key_tuple(serde, key) + tuple(window or ())
    key_bytes = None if key_parts is None else encode_key(serde, key_parts)
    if isinstance(key, str) and serde.key_format == "DELIMITED" and window is None:
        key_bytes = key.encode("utf-8")  # DELIMITED given as its text: written unchanged
    value_bytes = None if value is None else value.encode("utf-8") if _is_text(serde, value) else \
        encode_value(serde, _value_row(serde, value, ts))
    partition = sequence % partitions if key_bytes is None else default_partition(key_bytes, partitions)
    return Placed(topic, partition, OutRecord(key_bytes, value_bytes, ts, tuple(headers), partition))


def _is_text(serde: SerdeSpec, value: Any) -> bool:
    """A DELIMITED value given as its text (the cases' form): its UTF-8 bytes are the record's."""
    return isinstance(value, str) and serde.value_format == "DELIMITED"


def _key_tuple(serde: SerdeSpec, key: Any) -> tuple:
    if len(serde.key_columns) == 1 and serde.key_columns[0][1].is_nested:
        return (key,)  # one ARRAY, MAP or STRUCT key column: the list or object is its value
    if isinstance(key, dict):
        folded = {str(k).lower(): v for k, v in key.items()}
        return tuple(folded.get(name.lower()) for name, _ in serde.key_columns)
    if isinstance(key, (list, tuple)):
        return tuple(key)
    return (key,)


def _value_row(serde: SerdeSpec, value: Any, ts: int) -> dict:
    if isinstance(value, dict):
        # A JSON reader matches field names to columns ignoring case, and a missing field is NULL:
        # the row holds each payload column under its declared name.
        folded = {str(k).lower(): v for k, v in value.items()}
        row = {name: value[name] if name in value else folded.get(name.lower()) for name, _ in serde.payload_columns}
        # A virtual event-time column (Flink METADATA ... VIRTUAL) is absent: it is the record ts.
        missing_time = serde.timestamp_column and serde.timestamp_column.lower() not in folded
        return {**row, serde.timestamp_column: ts} if missing_time else row
    # An unwrapped single-column value.
    (name, _), = serde.payload_columns
    return {name: value}
