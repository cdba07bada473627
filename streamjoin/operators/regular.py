"""Flink's regular (unbounded) join: every row of either side joins every row of the other side
with the same key, past and future; updates and deletions retract what they joined."""

from __future__ import annotations

import enum
import heapq
from dataclasses import dataclass
from typing import Hashable

from streamjoin.operators.base import (
    Change,
    InMemoryStore,
    JoinProcessor,
    Record,
    Row,
    RowKind,
    Side,
    StreamTime,
)
from streamjoin.operators.changelog import KEYED_JOIN_TYPES, require_join_type
from streamjoin.operators.base import JoinType, Residual, accepts


class InputKind(enum.Enum):
    APPEND = "append"  # every record is a new row; a null value is counted and ignored
    # Keyed by `Record.key` (the join key is the input's primary key): a record replaces the
    # key's row, a null value deletes it.
    UPSERT = "upsert"


@dataclass(frozen=True)
class RegularJoinConfig:
    join_type: JoinType = JoinType.INNER
    left_input: InputKind = InputKind.APPEND
    right_input: InputKind = InputKind.APPEND
    residual: Residual | None = None
    # Event-time state TTL (ms): a stored row is dropped (counted as `expired`, nothing emitted)
    # once stream time passes the stream time of its write + ttl. None = keep forever.
    state_ttl_ms: int | None = None

    def __post_init__(self) -> None:
        require_join_type("a regular join", self.join_type, KEYED_JOIN_TYPES)
        if self.state_ttl_ms is not None and self.state_ttl_ms <= 0:
            raise ValueError("state_ttl_ms must be a positive number of milliseconds or None")

    def input_kind(self, side: Side) -> InputKind:
        return self.left_input if side is Side.LEFT else self.right_input


@dataclass
class StoredRow:
    row: Row
    ts: int
    uid: int
    associations: int = 0  # rows of the other side it joins (tracked for outer sides)


class RegularJoin(JoinProcessor):
    """Flink's StreamingJoinOperator: both sides are kept in state (key -> rows); a new row joins
    every stored row of the other side that has its key and passes the residual; a retracted row
    (upsert replaced or deleted) retracts every joined row it produced. Output is a Flink
    changelog of +I and -D rows. Outer sides count each stored row's associations so that a
    null-padded row is emitted while the row matches nothing and retracted (-D) when the first
    match arrives (re-emitted when the last match goes away). Output ts = the later of the two
    rows' ts (a padded row: its own ts); a -D carries exactly the row and ts it retracts.

    Worked timeline (LEFT JOIN, left append, right upsert, one key p1):

        arrival              emitted
        left  o1 @1          +I [o1, null] @1
        right scooter @2     -D [o1, null] @1, +I [o1, scooter] @2
        left  o2 @3          +I [o2, scooter] @3
        right e-scooter @4   retract scooter:     -D [o1, scooter] @2, -D [o2, scooter] @3,
                                                  +I [o1, null] @1, +I [o2, null] @3
                             accumulate e-scooter: -D [o1, null] @1, -D [o2, null] @3,
                                                  +I [o1, e-scooter] @4, +I [o2, e-scooter] @4
        right tombstone @5   -D [o1, e-scooter] @4, -D [o2, e-scooter] @4,
                             +I [o1, null] @1, +I [o2, null] @3

    State TTL (event time): `advance_to(now)` and every record move stream time; rows written
    more than `state_ttl_ms` of stream time ago are dropped without output.
    """

    def __init__(self, config: RegularJoinConfig) -> None:
        super().__init__()
        self.config = config
        self.state = (InMemoryStore(), InMemoryStore())  # per side: key -> list[StoredRow]
        self.clock = StreamTime()
        self.expiry: list[tuple[int, int, Side, Hashable]] = []  # heap: (expires_at, uid, ...)
        self.next_uid = 0

    def process(self, record: Record) -> list[Change]:
        self._expire(self.clock.observe(record.ts))
        side, key = record.side, record.key
        if key is None:
            self.metrics.count("null_key")
            if record.value is None or not self.config.join_type.preserves(side):
                return []
            # NULL equals nothing: an outer row with a null key stays padded forever.
            unmatchable = StoredRow(record.value, record.ts, uid=-1)
            return [self._padded(RowKind.INSERT, None, side, unmatchable)]
        out: list[Change] = []
        if self.config.input_kind(side) is InputKind.UPSERT:
            for old in self.state[side].get(key, []):
                out += self._retract(side, key, old)
        elif record.value is None:
            self.metrics.count("null_value")
            return []
        if record.value is not None:
            out += self._accumulate(side, key, record.value, record.ts)
        return out

    def advance_to(self, ts: int) -> list[Change]:
        self._expire(self.clock.observe(ts))
        return []

    def _accumulate(self, side: Side, key: Hashable, row: Row, ts: int) -> list[Change]:
        stored = StoredRow(row, ts, self.next_uid)
        self.next_uid += 1
        others = self.state[side.other].get(key, [])
        matches = [other for other in others if self._joins(side, stored, other)]
        out: list[Change] = []
        if matches:
            for other in matches:
                if self.config.join_type.preserves(side.other) and other.associations == 0:
                    out.append(self._padded(RowKind.DELETE, key, side.other, other))
                other.associations += 1
            out += [self._joined(RowKind.INSERT, key, side, stored, other) for other in matches]
            self.state[side.other].put(key, others)
        elif self.config.join_type.preserves(side):
            out.append(self._padded(RowKind.INSERT, key, side, stored))
        stored.associations = len(matches)
        if self.config.input_kind(side) is InputKind.UPSERT:
            self.state[side].put(key, [stored])
        else:
            self.state[side].put(key, self.state[side].get(key, []) + [stored])
        if self.config.state_ttl_ms is not None:
            expires_at = self.clock.now + self.config.state_ttl_ms
            heapq.heappush(self.expiry, (expires_at, stored.uid, side, key))
        return out

    def _retract(self, side: Side, key: Hashable, stored: StoredRow) -> list[Change]:
        own = [row for row in self.state[side].get(key, []) if row.uid != stored.uid]
        self._put(side, key, own)
        others = self.state[side.other].get(key, [])
        matches = [other for other in others if self._joins(side, stored, other)]
        if not matches:
            if self.config.join_type.preserves(side):
                return [self._padded(RowKind.DELETE, key, side, stored)]
            return []
        out = [self._joined(RowKind.DELETE, key, side, stored, other) for other in matches]
        for other in matches:
            if self.config.join_type.preserves(side.other) and other.associations == 1:
                out.append(self._padded(RowKind.INSERT, key, side.other, other))
            other.associations -= 1
        self.state[side.other].put(key, others)
        return out

    def _expire(self, now: int) -> None:
        while self.expiry and self.expiry[0][0] < now:
            _, uid, side, key = heapq.heappop(self.expiry)
            rows = self.state[side].get(key, [])
            remaining = [row for row in rows if row.uid != uid]
            if len(remaining) < len(rows):  # else the row was already retracted
                self.metrics.count("expired")
                self._put(side, key, remaining)

    def _put(self, side: Side, key: Hashable, rows: list[StoredRow]) -> None:
        if rows:
            self.state[side].put(key, rows)
        else:
            self.state[side].delete(key)

    def _joins(self, side: Side, stored: StoredRow, other: StoredRow) -> bool:
        left, right = (stored, other) if side is Side.LEFT else (other, stored)
        return accepts(self.config.residual, left.row, right.row)

    @staticmethod
    def _joined(
        kind: RowKind, key: Hashable, side: Side, stored: StoredRow, other: StoredRow
    ) -> Change:
        left, right = (stored, other) if side is Side.LEFT else (other, stored)
        return Change(kind, key, left.row, right.row, max(left.ts, right.ts))

    @staticmethod
    def _padded(kind: RowKind, key: Hashable, side: Side, stored: StoredRow) -> Change:
        if side is Side.LEFT:
            return Change(kind, key, stored.row, None, stored.ts)
        return Change(kind, key, None, stored.row, stored.ts)
