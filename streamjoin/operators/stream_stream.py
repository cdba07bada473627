"""Windowed stream-stream joins (ksqlDB / Lenses `WITHIN`) and the engine the Flink interval join
shares."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Hashable

from streamjoin.operators.base import (
    Change,
    InMemoryStore,
    JoinProcessor,
    JoinType,
    Record,
    Residual,
    RowKind,
    Side,
    StreamTime,
    padded,
)


# Kafka Streams' default grace when none is given (JoinWindows.of, what ksqlDB used before GRACE
# PERIOD existed): 24 h minus the window size, never negative.
LEGACY_GRACE_DAY_MS = 24 * 60 * 60 * 1000

_CLOSE, _EXPIRE = 0, 1


class TimeBoundedJoin(JoinProcessor):
    """Shared engine of time-bounded keyed joins: a record of one side matches every record of
    the other side with the same key and `l.ts - before <= r.ts <= l.ts + after`.

    Per side, a store maps key -> list of entries [ts, id, row, matched]. Every stored record gets
    a timer: at `close_at` (its window end + lag) an unmatched record of a preserved side is
    emitted null-padded with its own ts; at `expire_at` (no later non-late record can reach it)
    it leaves the store. `before + after < 0` is an empty window: nothing matches. Subclasses
    define the clock (stream time or watermark), what `late` means and how a late record is
    treated.
    """

    def __init__(self, join_type: JoinType, before: int, after: int, residual: Residual | None,
                 close_lag: int, retention_lag: int, eager_outer: bool = False) -> None:
        super().__init__()
        if join_type is JoinType.CROSS:
            raise ValueError("a time-bounded stream-stream join needs a key; CROSS is not supported")
        self.join_type, self.before, self.after, self.residual = join_type, before, after, residual
        self.close_lag, self.retention_lag, self.eager_outer = close_lag, retention_lag, eager_outer
        self.stores = (InMemoryStore(), InMemoryStore())
        self.timers: list[tuple[int, int, int, Side, Hashable]] = []
        self.next_id = 0
        # Per-side constants, indexed by Side (hot path: no enum calls per record).
        self.reaches = (after, before)
        self.preserved = tuple(join_type.preserves(side) for side in Side)

    # -- the clock, defined by subclasses -------------------------------------------------------
    def clock(self) -> int:
        raise NotImplementedError

    def close_at(self, side: Side, ts: int) -> int:
        """`reaches[side]`: how far after a record of `side` an other-side record may still match."""
        return ts + self.reaches[side] + self.close_lag

    def expire_at(self, side: Side, ts: int) -> int:
        # A non-late other-side record can still match up to `ts + before + after + lag`
        # inclusive, so the record leaves one millisecond later.
        return max(self.close_at(side, ts), ts + self.before + self.after + self.retention_lag + 1)

    def is_late(self, record: Record) -> bool:
        """Its window closed before it arrived."""
        return self.close_at(record.side, record.ts) < self.clock()

    # -- processing ------------------------------------------------------------------------------
    def probe(self, record: Record, cache: bool) -> list[Change]:
        """Join `record` with the stored other side; store it if `cache`."""
        side, key, ts, row = record.side, record.key, record.ts, record.value
        other_store = self.stores[1 - side]
        low, high = ts - self.reaches[1 - side], ts + self.reaches[side]
        out: list[Change] = []
        others = other_store.get(key)
        for entry in others or ():
            if low <= entry[0] <= high:
                left, right = (row, entry[2]) if side is Side.LEFT else (entry[2], row)
                if self.residual is None or self.residual(left, right) is True:
                    entry[3] = True
                    out.append(Change(RowKind.INSERT, key, left, right, max(ts, entry[0])))
        if out:
            other_store.put(key, others)  # persist the matched flags
        preserved = self.preserved[side]
        if not out and preserved and (self.eager_outer or not cache):
            out.append(padded(side, key, row, ts))
        if cache:
            entry_id = self.next_id
            self.next_id += 1
            store = self.stores[side]
            entries = store.get(key) or []
            entries.append([ts, entry_id, row, bool(out)])
            store.put(key, entries)
            if preserved and not self.eager_outer:
                heapq.heappush(self.timers, (self.close_at(side, ts), entry_id, _CLOSE, side, key))
            else:
                heapq.heappush(self.timers, (self.expire_at(side, ts), entry_id, _EXPIRE, side, key))
        return out

    def fire_timers(self) -> list[Change]:
        """Close and expire every record whose time has come, in due-time order."""
        out: list[Change] = []
        now = self.clock()
        while self.timers and self.timers[0][0] <= now:
            due, entry_id, phase, side, key = heapq.heappop(self.timers)
            store = self.stores[side]
            entries = store.get(key)
            entry = next(e for e in entries if e[1] == entry_id)
            if phase == _CLOSE:
                if not entry[3]:
                    out.append(padded(side, key, entry[2], entry[0]))
                expire = self.expire_at(side, entry[0])
                if expire > due:
                    heapq.heappush(self.timers, (expire, entry_id, _EXPIRE, side, key))
                    continue
            remaining = [e for e in entries if e[1] != entry_id]
            if remaining:
                store.put(key, remaining)
            else:
                store.delete(key)
        return out


@dataclass(frozen=True)
class StreamStreamJoinConfig:
    """ksqlDB `WITHIN (before, after) [GRACE PERIOD grace]` / Lenses `WITHIN n` (ms).

    `grace` None: the legacy Kafka Streams default (24 h minus the window). `eager_outer`: emit an
    unmatched row at once (ksqlDB without GRACE PERIOD) instead of when its window closes
    (ksqlDB with GRACE PERIOD, Lenses)."""

    before: int
    after: int
    join_type: JoinType = JoinType.INNER
    grace: int | None = None
    eager_outer: bool = False
    residual: Residual | None = None

    @classmethod
    def within(cls, window: int, **options) -> "StreamStreamJoinConfig":
        return cls(before=window, after=window, **options)

    def __post_init__(self) -> None:
        if self.before < 0 or self.after < 0:
            raise ValueError(f"WITHIN bounds must not be negative: ({self.before}, {self.after})")
        if self.grace is not None and self.grace < 0:
            raise ValueError(f"GRACE PERIOD must not be negative: {self.grace}")

    @property
    def effective_grace(self) -> int:
        if self.grace is not None:
            return self.grace
        return max(LEGACY_GRACE_DAY_MS - self.before - self.after, 0)


class StreamStreamJoin(TimeBoundedJoin):
    """ksqlDB / Kafka Streams stream-stream join (INNER, LEFT, RIGHT, FULL) within a window.

    A record joins every stored other-side record with its key and `l.ts - before <= r.ts <=
    l.ts + after`; a joined row's ts is the later input ts. Stream time is the largest ts seen on
    either side (null-key / null-value records are ignored and counted, and do not move it). A
    record is late, dropped and counted, when `ts + reach + grace < stream time` (reach = `after`
    for left records, `before` for right ones). An unmatched record of a preserved side is emitted
    null-padded, with its own ts, once `stream time >= ts + reach + grace` (inclusive, as the
    ksqlDB doc's table shows), or at once with `eager_outer`. Records leave the state just after
    `ts + before + after + grace`, when no non-late record can match them any more.

    Timeline, LEFT JOIN WITHIN 15 s GRACE PERIOD 5 s, one key (the ksqlDB doc's table, in s):

        L A@3                     stored, window closes at 3+15+5 = 23
        R a@4     -> [A,a]@4      A matched
        L E@40                    stream time 40: closes at 60
        L F@60    -> [E,null]@40  stream time 60 >= 60 closes E
        R f@80    -> [F,null]@60
        R q@36 (stream time 80)   late: 36+15+5 < 80, dropped, metrics["late"] = 1
    """

    def __init__(self, config: StreamStreamJoinConfig) -> None:
        grace = config.effective_grace
        super().__init__(config.join_type, config.before, config.after, config.residual,
                         close_lag=grace, retention_lag=grace, eager_outer=config.eager_outer)
        self.config = config
        self.time = StreamTime()

    def clock(self) -> int:
        return self.time.now

    def process(self, record: Record) -> list[Change]:
        if record.key is None:
            self.metrics.count("null_key")
            return []
        if record.value is None:
            self.metrics.count("null_value")
            return []
        self.time.observe(record.ts)
        if self.is_late(record):
            self.metrics.count("late")
            return []
        return self.probe(record, cache=True) + self.fire_timers()

    def advance_to(self, ts: int) -> list[Change]:
        self.time.observe(ts)
        return self.fire_timers()
