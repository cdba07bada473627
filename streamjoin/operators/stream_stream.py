"""Windowed stream-stream joins (ksqlDB / Lenses `WITHIN`) and the engine the Flink interval join
shares."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from operator import itemgetter
from typing import Hashable

from streamjoin.operators.base import (
    BEGINNING_OF_TIME,
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
# Looked up once: enum members and calls are slow on the per-record path.
_SIDES, _LEFT, _INSERT = tuple(Side), Side.LEFT, RowKind.INSERT
# The fields of a stored record, a list (its matched flag changes in place; a list pickles into
# the store's pages smaller and faster than an object): [ts, id, row, matched].
_TS, _ID, _ROW, _MATCHED = range(4)
_entry_ts = itemgetter(_TS)


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

    # -- how long records stay, and when an unmatched one goes out: overridden by a subclass ------
    def retained_from(self, side: Side) -> int:
        """The oldest ts of `side` a probe may still match (expiry by timers removes the rest)."""
        return BEGINNING_OF_TIME

    def unmatched_now(self, side: Side, ts: int, cache: bool) -> bool:
        """Whether an unmatched record of a preserved side is emitted null-padded at once (else
        when its window closes): eagerly, or when it is not kept to wait for a match."""
        return self.eager_outer or not cache

    def on_stored(self, side: Side, key: Hashable, entries: list) -> None:
        """A record of `side` was just appended to `entries`, the stored ones of `key`."""

    def schedule_expiry(self, side: Side, ts: int, entry_id: int, key: Hashable) -> None:
        heapq.heappush(self.timers, (self.expire_at(side, ts), entry_id, _EXPIRE, side, key))

    def expire_after_close(self, side: Side, ts: int, entry_id: int, key: Hashable, due: int) -> bool:
        """At its window's close, whether a record stays stored (then its expiry is scheduled)."""
        if self.expire_at(side, ts) > due:
            self.schedule_expiry(side, ts, entry_id, key)
            return True
        return False

    # -- processing ------------------------------------------------------------------------------
    def probe(self, record: Record, cache: bool) -> list[Change]:
        """Join `record` with the stored other side; store it if `cache`."""
        side, key, ts, row = record.side, record.key, record.ts, record.value
        other_store = self.stores[1 - side]
        low = max(ts - self.reaches[1 - side], self.retained_from(_SIDES[1 - side]))
        high = ts + self.reaches[side]
        out: list[Change] = []
        others = other_store.get(key)
        for entry in others or ():
            if low <= entry[_TS] <= high:
                left, right = (row, entry[_ROW]) if side is _LEFT else (entry[_ROW], row)
                if self.residual is None or self.residual(left, right) is True:
                    entry[_MATCHED] = True
                    out.append(Change._make((_INSERT, key, left, right, max(ts, entry[_TS]))))
        if out:
            other_store.put(key, others)  # persist the matched flags
        preserved = self.preserved[side]
        if not out and preserved and self.unmatched_now(side, ts, cache):
            out.append(padded(side, key, row, ts))
        if cache:
            entry_id = self.next_id
            self.next_id += 1
            store = self.stores[side]
            entries = store.get(key) or []
            entries.append([ts, entry_id, row, bool(out)])  # matched, or already out padded
            store.put(key, entries)
            self.on_stored(side, key, entries)
            if preserved and not entries[-1][_MATCHED]:
                heapq.heappush(self.timers, (self.close_at(side, ts), entry_id, _CLOSE, side, key))
            else:
                self.schedule_expiry(side, ts, entry_id, key)
        return out

    def fire_timers(self) -> list[Change]:
        """Close and expire every record whose time has come, in due-time order."""
        out: list[Change] = []
        now = self.clock()
        while self.timers and self.timers[0][0] <= now:
            due, entry_id, phase, side, key = heapq.heappop(self.timers)
            store = self.stores[side]
            entries = store.get(key)
            entry = next(e for e in entries if e[_ID] == entry_id)
            if phase == _CLOSE:
                if not entry[_MATCHED]:
                    out.append(padded(side, key, entry[_ROW], entry[_TS]))
                if self.expire_after_close(side, entry[_TS], entry_id, key, due):
                    continue
            remaining = [e for e in entries if e[_ID] != entry_id]
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
    (ksqlDB with GRACE PERIOD, Lenses). `store_retention`: late records as Kafka Streams treats
    them (see StreamStreamJoin) instead of as ksqlDB's documentation describes."""

    before: int
    after: int
    join_type: JoinType = JoinType.INNER
    grace: int | None = None
    eager_outer: bool = False
    residual: Residual | None = None
    store_retention: bool = False

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

    `store_retention` (Kafka Streams, what ksqlDB runs): each side keeps its records in a window
    store of its own, by the largest ts that side has seen (its store time), for before + after +
    grace; older records are not kept (counted `late`) and the store forgets them. The join
    drops nothing: every record probes what the other side's store still holds. An unmatched
    record of a preserved side whose window already ended (`ts + reach < stream time`) is emitted
    null-padded at once; otherwise it waits for its close as above.

    Timeline, LEFT JOIN WITHIN 1 minute GRACE PERIOD 1 minute (retention 3 min; in s; one key
    each, k0..k3):

        L A@0  k0                 left store time 0, stored, waits (closes at 120)
        R a@60 k0 -> [A,a]@60     right store time 60
        L B@330 k1                stream time and left store time 330, stored, waits
        L C@90 k2 -> [C,null]@90  90 < 330 - 180: not stored (late); no match, window ended
                                  (90 + 60 < 330): padded at once
        R c@90 k2                 right store time 90, stored; C is not in the left store
        L D@60 k3 -> [D,null]@60  as C
        R d@60 k3                 stored; D is not in the left store (a RIGHT JOIN would emit
                                  [null,d]@60 at once, and a later L D'@90 k3 would still join d)
    """

    def __init__(self, config: StreamStreamJoinConfig) -> None:
        grace = config.effective_grace
        super().__init__(config.join_type, config.before, config.after, config.residual,
                         close_lag=grace, retention_lag=grace, eager_outer=config.eager_outer)
        self.config = config
        self.time = StreamTime()
        self.retention = config.before + config.after + grace  # store_retention: a side store keeps this long
        self.store_times = [BEGINNING_OF_TIME, BEGINNING_OF_TIME]
        # store_retention: per side, a heap of (ts, entry id, key) of each key's earliest entry
        self.expiring: tuple[list, list] = ([], [])

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
        if self.config.store_retention:
            side = record.side
            self.store_times[side] = max(self.store_times[side], record.ts)
            kept = record.ts >= self.retained_from(side)
            if not kept:
                self.metrics.count("late")
            out = self.probe(record, cache=kept) + self.fire_timers()
            self.forget(side)
            return out
        if self.is_late(record):
            self.metrics.count("late")
            return []
        return self.probe(record, cache=True) + self.fire_timers()

    def advance_to(self, ts: int) -> list[Change]:
        self.time.observe(ts)
        return self.fire_timers()

    # -- store_retention: each side's store forgets by its own store time -----------------------
    def retained_from(self, side: Side) -> int:
        if not self.config.store_retention:
            return BEGINNING_OF_TIME
        return self.store_times[side] - self.retention

    def unmatched_now(self, side: Side, ts: int, cache: bool) -> bool:
        if not self.config.store_retention:
            return super().unmatched_now(side, ts, cache)
        return self.eager_outer or not cache or ts + self.reaches[side] < self.clock()

    def on_stored(self, side: Side, key: Hashable, entries: list) -> None:
        """store_retention: the key's earliest entry (the first of equal times) is in its side's
        `expiring` heap; a new entry is pushed only when it is earlier than every other one (a key
        new to the store, or an out-of-order record), so the heap holds about one entry a key."""
        if not self.config.store_retention:
            return
        ts = entries[-1][_TS]
        if len(entries) == 1 or (ts < entries[-2][_TS] and ts < min(entry[_TS] for entry in entries[:-1])):
            heapq.heappush(self.expiring[side], (ts, entries[-1][_ID], key))

    def schedule_expiry(self, side: Side, ts: int, entry_id: int, key: Hashable) -> None:
        if not self.config.store_retention:
            super().schedule_expiry(side, ts, entry_id, key)  # else `on_stored` did, at once

    def expire_after_close(self, side: Side, ts: int, entry_id: int, key: Hashable, due: int) -> bool:
        if not self.config.store_retention:
            return super().expire_after_close(side, ts, entry_id, key, due)
        return True  # its store decides, by its own time (`forget`)

    def forget(self, side: Side) -> None:
        """Remove what `side`'s store no longer keeps: the entries of each key whose earliest
        entry fell behind, all of its entries that did. A heap item whose entry is no longer its
        key's earliest is left over from before (the key gained an earlier entry, or lost it) and
        is passed over. A preserved record's window closed before (its store time is at most
        stream time, and retention covers reach + grace), so an unmatched one was emitted already."""
        heap, oldest, store = self.expiring[side], self.retained_from(side), self.stores[side]
        while heap and heap[0][0] < oldest:
            _, entry_id, key = heapq.heappop(heap)
            entries = store.get(key)
            if entries is None or min(entries, key=_entry_ts)[_ID] != entry_id:
                continue
            remaining = [entry for entry in entries if entry[_TS] >= oldest]
            if remaining:
                store.put(key, remaining)
                earliest = min(remaining, key=_entry_ts)
                heapq.heappush(heap, (earliest[_TS], earliest[_ID], key))
            else:
                store.delete(key)
