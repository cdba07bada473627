"""ASOF join (RisingWave / Snowflake `ASOF JOIN ... MATCH_CONDITION (l.ts >= r.ts)`), and the
watermark-driven machinery the event-time temporal join (temporal.py) shares with it."""

from __future__ import annotations

import bisect
import enum
from dataclasses import dataclass, field
from typing import Hashable

from streamjoin.operators.base import (
    BEGINNING_OF_TIME,
    END_OF_TIME,
    Change,
    InMemoryStore,
    JoinProcessor,
    Record,
    Row,
    RowKind,
    Side,
)
from streamjoin.operators.changelog import require_join_type
from streamjoin.operators.base import JoinType, Residual, accepts


class AsofCondition(enum.Enum):
    """MATCH_CONDITION, read as `left.ts <op> right.ts`."""

    GE = ">="  # the latest right row at or before the left row
    GT = ">"  # the latest right row strictly before
    LE = "<="  # the earliest right row at or after
    LT = "<"  # the earliest right row strictly after

    @property
    def looks_back(self) -> bool:
        return self in (AsofCondition.GE, AsofCondition.GT)


@dataclass(frozen=True)
class AsofJoinConfig:
    join_type: JoinType = JoinType.INNER
    condition: AsofCondition = AsofCondition.GE
    # Watermark delay per input (ms): the input's watermark is its max ts seen minus its delay.
    left_delay: int = 0
    right_delay: int = 0
    # Applied to the one row the match condition picks (a rejected pick is not replaced).
    residual: Residual | None = None

    def __post_init__(self) -> None:
        require_join_type("an ASOF/temporal join", self.join_type, (JoinType.INNER, JoinType.LEFT))
        if self.left_delay < 0 or self.right_delay < 0:
            raise ValueError("watermark delays must be >= 0 ms")


@dataclass
class Watermarks:
    """Flink-style watermark of a two-input operator: per input max ts seen minus its delay,
    the operator's watermark the min of both (raised by `advance_to`). Spark's convention:
    watermark W promises no more rows with ts < W, so a row with ts < W is late."""

    delays: tuple[int, int]
    max_seen: list[int] = field(default_factory=lambda: [BEGINNING_OF_TIME, BEGINNING_OF_TIME])
    floor: int = BEGINNING_OF_TIME

    def observe(self, side: Side, ts: int) -> None:
        self.max_seen[side] = max(self.max_seen[side], ts)

    def advance_to(self, ts: int) -> None:
        self.floor = max(self.floor, ts)

    @property
    def current(self) -> int:
        per_input = min(seen - delay for seen, delay in zip(self.max_seen, self.delays))
        return max(self.floor, per_input)


# One right row in a key's history; `row` None = the key was deleted at `ts` (versioned table).
Version = tuple[int, int, "Row | None"]  # (ts, arrival number, row)


def _time(entry: tuple) -> int:
    """Sort key of versions and pending left rows, both (ts, arrival, ...)."""
    return entry[0]


def _time_then_arrival(entry: tuple) -> tuple[int, int]:
    return entry[0], entry[1]


class AsofJoin(JoinProcessor):
    """Joins each left row to the one right row of the same key closest in time on the side the
    match condition names; INNER or LEFT (unmatched left rows padded with null).

    State: per key the right rows sorted by (ts, arrival) ("history"), and the left rows waiting
    for their match to be final ("pending"). A left row is emitted once no later right row can
    change its match: looking back (>=, >) when its ts < watermark; looking forward (<=, <) when
    the closest later right row has ts < watermark (or at end of time, padded/dropped if none).
    Emission follows (ts, arrival) order; output ts = the left row's ts. Among right rows with
    the same ts the last arrived wins. Cleanup when a key gets a new right row: looking back,
    only the latest row before the watermark is kept of the older ones; looking forward, rows
    before the watermark are dropped. Late rows (ts < watermark) are counted (`late`): a late
    left row is dropped, a late right row is still stored for the rows it can serve. Null keys
    and null values are counted (`null_key`, `null_value`); a LEFT join still emits a null-key
    left row, padded (SQL: NULL matches nothing).

    Worked timeline (condition >=, LEFT, delays 0; key k; W = min(max left ts, max right ts)):

        arrival            W      history of k      pending        emitted
        right k r1 @10     -inf   [r1@10]           -              -
        left  k L1 @15     10     [r1@10]           L1@15          -
        left  k L2 @12     10     [r1@10]           L1, L2@12      -
        right k r2 @14     14     [r1@10, r2@14]    L1@15          +I [L2, r1] @12
        right k r3 @20     15     [r1, r2, r3@20]   L1@15          -
        advance_to(END)    END    ...               -              +I [L1, r2] @15
    """

    right_tombstones_are_versions = False  # True for a versioned table (temporal join)

    def __init__(self, config: AsofJoinConfig) -> None:
        super().__init__()
        self.config = config
        self.watermarks = Watermarks((config.left_delay, config.right_delay))
        self.history = InMemoryStore()  # key -> list[Version], sorted by (ts, arrival)
        # (ts, arrival, key, left row, its kind: a changelog probe's retractions join like rows)
        self.pending: list[tuple[int, int, Hashable, Row, RowKind]] = []
        self.arrivals = 0

    def process(self, record: Record) -> list[Change]:
        if not self._accept(record):
            return []
        watermark = self.watermarks.current
        # A retraction of a probe row is never dropped: the row it withdraws may have been emitted.
        late = record.ts < watermark and not record.kind.is_retraction
        if late:
            self.metrics.count("late")
        self.watermarks.observe(record.side, record.ts)
        self.arrivals += 1
        if record.side is Side.RIGHT:
            # A changelog's old row (-U) is replaced by its successor; only a versioned table
            # reads a -D, as a deletion version.
            if record.kind.is_retraction and not (record.kind is RowKind.DELETE and self.right_tombstones_are_versions):
                return self._emit_final()
            self._store_version(record, watermark)
        elif not late:
            probe = (record.ts, self.arrivals, record.key, record.value, record.kind)
            bisect.insort(self.pending, probe, key=_time_then_arrival)
        return self._emit_final()

    def advance_to(self, ts: int) -> list[Change]:
        self.watermarks.advance_to(ts)
        return self._emit_final()

    def _accept(self, record: Record) -> bool:
        """Counts what cannot join; False for records the join ignores."""
        if record.key is None:
            self.metrics.count("null_key")
            if record.side is Side.RIGHT or self.config.join_type is JoinType.INNER:
                return False
        if record.value is None:
            if record.side is Side.RIGHT and self.right_tombstones_are_versions:
                return True
            self.metrics.count("null_value")
            return False
        return True

    def _store_version(self, record: Record, watermark: int) -> None:
        history = self._pruned(self.history.get(record.key, []), watermark)
        row = None if record.kind is RowKind.DELETE else record.value  # a changelog's -D carries the row
        bisect.insort(history, (record.ts, self.arrivals, row), key=_time_then_arrival)
        self.history.put(record.key, history)

    def _pruned(self, history: list[Version], watermark: int) -> list[Version]:
        # Every left row before the watermark has been emitted, so only rows that can still be
        # the match of a left row at or after it are kept.
        before = bisect.bisect_left(history, watermark, key=_time)
        if not self.config.condition.looks_back:
            return history[before:]
        kept = history[max(before - 1, 0):]
        if kept and kept[0][0] < watermark and kept[0][2] is None:
            kept = kept[1:]  # a deletion before the watermark: as if the key never existed
        return kept

    def _emit_final(self) -> list[Change]:
        watermark = self.watermarks.current
        out: list[Change] = []
        waiting = []
        for index, probe in enumerate(self.pending):
            ts, _, key, left, kind = probe
            final, version = self._match(ts, key, watermark)
            if not final:
                if self.config.condition.looks_back:  # pending is in ts order: none after is
                    waiting += self.pending[index:]
                    break
                waiting.append(probe)
                continue
            right = version[2] if version is not None else None
            if right is not None and not accepts(self.config.residual, left, right):
                right = None
            if right is not None or self.config.join_type is JoinType.LEFT:
                out.append(Change(kind, key, left, right, ts))
        self.pending = waiting
        return out

    def _match(self, ts: int, key: Hashable, watermark: int) -> tuple[bool, Version | None]:
        """(is the match final, the matching version or None)."""
        condition = self.config.condition
        if key is None:  # matches nothing, whichever way it looks
            return ts < watermark, None
        history = self.history.get(key, [])
        if condition.looks_back:
            if ts >= watermark:
                return False, None
            if condition is AsofCondition.GE:
                index = bisect.bisect_right(history, ts, key=_time) - 1
            else:
                index = bisect.bisect_left(history, ts, key=_time) - 1
            return True, history[index] if index >= 0 else None
        if condition is AsofCondition.LE:
            first = bisect.bisect_left(history, ts, key=_time)
        else:
            first = bisect.bisect_right(history, ts, key=_time)
        if first == len(history):
            return watermark >= END_OF_TIME, None
        closest = history[first][0]
        last_of_that_time = bisect.bisect_right(history, closest, key=_time) - 1
        return closest < watermark, history[last_of_that_time]
