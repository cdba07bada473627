"""Where a Flink Kafka table's first run starts reading (`'scan.startup.mode'` and its companion
options), as the planner hands it to the engine. Only a run without a checkpoint uses it: a
checkpointed run goes on from its checkpoint, as Flink's restore from a savepoint does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

StartupMode = Literal["earliest-offset", "latest-offset", "group-offsets", "timestamp", "specific-offsets"]
STARTUP_MODES: tuple[str, ...] = get_args(StartupMode)
OffsetReset = Literal["earliest", "latest", "none"]


@dataclass(frozen=True)
class Startup:
    """`mode`; `timestamp_ms` for 'timestamp' (each partition from its first record at or after
    it, the log end when none is); `offsets` for 'specific-offsets' ((partition, offset) pairs; a
    partition not listed starts at its earliest offset); for 'group-offsets', `group_id` (the
    offsets that consumer group committed) and `offset_reset` (a partition without a committed
    offset: 'earliest', 'latest', or 'none' = the run fails naming it)."""

    mode: StartupMode = "earliest-offset"
    timestamp_ms: int | None = None
    offsets: tuple[tuple[int, int], ...] = ()
    group_id: str | None = None
    offset_reset: OffsetReset = "none"

    def describe(self) -> str:
        if self.mode == "timestamp":
            return f"timestamp {self.timestamp_ms}"
        if self.mode == "specific-offsets":
            return "specific-offsets " + ";".join(f"partition:{p},offset:{o}" for p, o in self.offsets)
        if self.mode == "group-offsets":
            return f"group-offsets of {self.group_id} (else {self.offset_reset})"
        return self.mode


EARLIEST = Startup()
