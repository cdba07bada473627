"""Record shapes exchanged with Kafka, and the replay header that makes the at-least-once sink's
duplicates detectable by readers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Iterator, Sequence

# Header the Spark Kafka sink adds to every record: "<writer id>:<batch id>:<seq>". A replayed
# micro-batch re-produces exactly the same ids, so a reader keeps the first copy of each id.
REPLAY_HEADER = "streamjoin.id"

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
        return next((value for key, value in self.headers if key == name), None)


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
