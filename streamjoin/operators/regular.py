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
from streamjoin.operators.changelog import FILTERING_JOIN_TYPES, KEYED_JOIN_TYPES, require_join_type
from streamjoin.operators.base import JoinType, Residual, accepts


class InputKind(enum.Enum):
    # Every record is a new row, or (a changelog's -U / -D) withdraws an equal row added before;
    # a null value is counted and ignored.
    APPEND = "append"
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
    # Per side as (left, right) (Flink's STATE_TTL hint names each input).
    state_ttl_ms: int | tuple[int | None, int | None] | None = None

    def __post_init__(self) -> None:
        require_join_type("a regular join", self.join_type, KEYED_JOIN_TYPES + FILTERING_JOIN_TYPES)
        if any(ttl is not None and ttl <= 0 for ttl in map(self.ttl, Side)):
            raise ValueError("state_ttl_ms must be a positive number of milliseconds or None")

    def ttl(self, side: Side) -> int | None:
        return self.state_ttl_ms[side] if isinstance(self.state_ttl_ms, tuple) else self.state_ttl_ms

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

    An upsert row replaced by a new one is retracted and the new one added, netted per result
    row (`_as_updates`): a result row that only changes is -U old, +U new (an upsert sink keyed
    by the result's upsert key writes the new value, as Flink's join does for an upsert input).

    Worked timeline (LEFT JOIN, left append, right upsert, one key p1):

        arrival              emitted
        left  o1 @1          +I [o1, null] @1
        right scooter @2     -D [o1, null] @1, +I [o1, scooter] @2
        left  o2 @3          +I [o2, scooter] @3
        right e-scooter @4   -U [o1, scooter] @2, +U [o1, e-scooter] @4,
                             -U [o2, scooter] @3, +U [o2, e-scooter] @4
        right tombstone @5   -D [o1, e-scooter] @4, -D [o2, e-scooter] @4,
                             +I [o1, null] @1, +I [o2, null] @3

    State TTL (event time): `advance_to(now)` and every record move stream time; rows written
    more than `state_ttl_ms` of stream time ago are dropped without output.

    SEMI / ANTI (Flink's `IN` / `EXISTS` subqueries): the result is left rows only, each at most
    once. Every stored left row counts its matches; SEMI emits it while the count is above 0,
    ANTI while it is 0, so a right row that moves a count across 0 emits or retracts (-D) it:

        ANTI, one key          emitted
        left  o1 @1            +I [o1] @1      (no match)
        right b1 @2            -D [o1] @1      (count 0 -> 1)
        left  o2 @3            -               (count 1)
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
            unmatched_kept = self.config.join_type.preserves(side) or (
                self.config.join_type is JoinType.ANTI and side is Side.LEFT)
            if record.value is None or not unmatched_kept:
                return []
            # NULL equals nothing: an outer (or anti) row with a null key stays unmatched forever.
            unmatchable = StoredRow(record.value, record.ts, uid=-1)
            return [self._padded(RowKind.INSERT, None, side, unmatchable)]
        retracted: list[Change] = []
        if record.kind.is_retraction and record.value is not None:
            return self._withdraw(side, key, record.value)
        if self.config.input_kind(side) is InputKind.UPSERT:
            for old in self.state[side].get(key, []):
                retracted += self._retract(side, key, old)
        elif record.value is None:
            self.metrics.count("null_value")
            return []
        if record.value is None:
            return retracted
        return _as_updates(side, retracted, self._accumulate(side, key, record.value, record.ts))

    def advance_to(self, ts: int) -> list[Change]:
        self._expire(self.clock.observe(ts))
        return []

    def _accumulate(self, side: Side, key: Hashable, row: Row, ts: int) -> list[Change]:
        stored = StoredRow(row, ts, self.next_uid)
        self.next_uid += 1
        others = self.state[side.other].get(key, [])
        matches = [other for other in others if self._joins(side, stored, other)]
        out: list[Change] = []
        if self.config.join_type.filters_left:
            out = self._filtered(RowKind.INSERT, key, side, stored, others, matches)
        elif matches:
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
        ttl = self.config.ttl(side)
        if ttl is not None:
            expires_at = self.clock.now + ttl
            heapq.heappush(self.expiry, (expires_at, stored.uid, side, key))
        return out

    def _retract(self, side: Side, key: Hashable, stored: StoredRow) -> list[Change]:
        own = [row for row in self.state[side].get(key, []) if row.uid != stored.uid]
        self._put(side, key, own)
        others = self.state[side.other].get(key, [])
        matches = [other for other in others if self._joins(side, stored, other)]
        if self.config.join_type.filters_left:
            return self._filtered(RowKind.DELETE, key, side, stored, others, matches)
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

    def _withdraw(self, side: Side, key: Hashable, row: Row) -> list[Change]:
        """A changelog input's retraction: the stored row equal to `row` leaves, with its results."""
        stored = next((s for s in self.state[side].get(key, []) if s.row == row), None)
        if stored is None:
            self.metrics.count("retraction_without_row")
            return []
        return self._retract(side, key, stored)

    def _filtered(self, kind: RowKind, key: Hashable, side: Side, stored: StoredRow, others: list[StoredRow],
                  matches: list[StoredRow]) -> list[Change]:
        """SEMI / ANTI: `stored` of `side` arrives (INSERT) or leaves (DELETE) with `matches`.
        A left row is emitted or retracted itself; a right row moves its matches' counts."""
        semi = self.config.join_type is JoinType.SEMI
        if side is Side.LEFT:
            return [self._padded(kind, key, side, stored)] if bool(matches) == semi else []
        out = []
        step = 1 if kind is RowKind.INSERT else -1
        for other in matches:
            crosses = other.associations == (0 if step > 0 else 1)
            other.associations += step
            if crosses:  # SEMI follows the right row's kind, ANTI the opposite
                emitted = kind if semi else (RowKind.DELETE if step > 0 else RowKind.INSERT)
                out.append(self._padded(emitted, key, Side.LEFT, other))
        if matches:
            self.state[Side.LEFT].put(key, others)
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


def _as_updates(side: Side, retracted: list[Change], added: list[Change]) -> list[Change]:
    """An upsert row replaced: what retracting the old row and adding the new one emitted, netted
    per result row. A change of the old row and one of the new row that hold the same other-side
    row (or both neither) are one result row: the same rows on both sides cancel out (a padded
    row re-emitted and retracted at once), different ones become -U old, +U new."""
    def slot(change: Change) -> tuple:
        own, other = (change.left, change.right) if side is Side.LEFT else (change.right, change.left)
        return id(other), own is None

    pending = {slot(change): change for change in retracted}
    out: list[Change] = []
    for change in added:
        old = pending.pop(slot(change), None)
        same_rows = old is not None and (old.left, old.right) == (change.left, change.right)
        if old is None:
            out.append(change)
        elif old.kind is RowKind.DELETE and change.kind is RowKind.INSERT and not same_rows:
            out += [Change(RowKind.UPDATE_BEFORE, old.key, old.left, old.right, old.ts),
                    Change(RowKind.UPDATE_AFTER, change.key, change.left, change.right, change.ts)]
        elif not (same_rows and old.kind is not change.kind):
            out += [old, change]
    return list(pending.values()) + out
