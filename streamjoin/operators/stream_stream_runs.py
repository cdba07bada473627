"""Stream-stream joins over a run of records in one loop: ksqlDB's INNER join as its engine runs
it (each side's window store) and Flink's interval join, the fast paths of
`StreamStreamJoin.process` and `IntervalJoin.process`, which stay the reference."""

from __future__ import annotations

from heapq import heappop, heappush
from typing import Hashable, Sequence

from streamjoin.operators.base import BEGINNING_OF_TIME, Change, JoinType, Row, RowKind, padded
from streamjoin.operators.interval import IntervalJoin
from streamjoin.operators.stream_stream import _CLOSE, _EXPIRE, StreamStreamJoin

_MAKE, _INSERT = Change._make, RowKind.INSERT
# A record of a run: (its index in the run, side 0 left / 1 right, join key, row, ts, anything).
RunRecord = tuple[int, int, Hashable | None, Row, int, object]


def takes_runs(join: StreamStreamJoin) -> bool:
    """Whether `StreamStreamInnerRun` may take `join`'s records: an INNER join with no residual
    condition on the engine's window stores, so nothing is ever padded and no timer is set."""
    config = join.config
    return (config.join_type is JoinType.INNER and config.residual is None and config.store_retention
            and not join.timers)


class StreamStreamInnerRun:
    """The changes of each record of a run, with its index, as `join.process` gives them record
    by record (same store contents, matched flags, entry ids, heaps, stream and store times,
    counts); what `process` does in calls (probe, the empty timer queue, retained_from,
    on_stored) happens inline, and the stores are reached through their `accessors`.

    Per record: a NULL key is counted and skipped; otherwise the record moves stream time and its
    side's store time, probes the other side's entries of its key within the window (from that
    side's oldest kept time), marks them matched, and is stored unless it is behind its own
    store's retention (counted `late`, though it still joined). Then its side forgets what its
    store time has left behind (`StreamStreamJoin.forget`).

    Timeline, JOIN WITHIN 10 ms GRACE PERIOD 0 ms (retention 20 ms), one key; L left, R right:

        L a@100   left store time 100, stored
        R x@105   -> [a,x]@105 (100 >= 105 - 10); right store time 105, stored
        L b@70    -> nothing (x is 35 ms after it); 70 < 100 - 20: not stored, late
        L c@130   left store time 130: a (100 < 110) forgotten; x (105 < 120) is not in reach
    """

    def __init__(self, join: StreamStreamJoin) -> None:
        self.join = join

    def __call__(self, records: Sequence[RunRecord]) -> list[tuple[int, Change]]:
        join = self.join
        stores, expiring, store_times, reaches, retention = (join.stores, join.expiring, join.store_times,
                                                             join.reaches, join.retention)
        (gets, puts), now = _accessors(stores), join.time.now
        joined: list[tuple[int, Change]] = []
        late, keyed = 0, [record for record in records if record[2] is not None]  # (2: the key)
        for index, side, key, row, ts, _ in keyed:
            if ts > now:
                now = ts
            other, matched = 1 - side, False
            if ts > store_times[side]:
                store_times[side] = ts
            oldest, others = store_times[side] - retention, gets[other](key)
            if others and _probed(joined, index, side, key, row, ts, others,
                                  max(ts - reaches[other], store_times[other] - retention), ts + reaches[side]):
                matched = True
                puts[other](key, others)  # the matched flags, persisted
            if ts >= oldest:
                entry_id = join.next_id
                join.next_id, entries = entry_id + 1, gets[side](key)
                if entries is None:
                    puts[side](key, [[ts, entry_id, row, matched]])
                    heappush(expiring[side], (ts, entry_id, key))
                else:
                    entries.append([ts, entry_id, row, matched])
                    puts[side](key, entries)
                    if ts < entries[-2][0]:  # out of order: maybe the key's earliest (`on_stored`)
                        join.on_stored(side, key, entries)
            else:
                late += 1
            if expiring[side] and expiring[side][0][0] < oldest:
                join.forget(side)
        join.time.now = now
        _counted(join, len(records) - len(keyed), late)
        return joined


def _accessors(stores) -> tuple[tuple, tuple]:
    """(get, put) of the two sides' stores, each pair indexed by side."""
    (left_get, left_put), (right_get, right_put) = (store.accessors() for store in stores)
    return (left_get, right_get), (left_put, right_put)


def _probed(joined: list, index: int, side: int, key, row: Row, ts: int, others: list, low: int, high: int) -> bool:
    """Each of `others` (the other side's entries of `key`) timed within [low, high] marked
    matched and joined with the record, into `joined`; whether any was."""
    matched = False
    for entry in others:
        at = entry[0]
        if low <= at <= high:
            entry[3] = matched = True
            later = at if at > ts else ts
            joined.append((index, _MAKE((_INSERT, key, row, entry[2], later) if side == 0
                                        else (_INSERT, key, entry[2], row, later))))
    return matched


def _counted(join, null_keys: int, late: int) -> None:
    """The run's records with a NULL key (skipped: they move no time) and late records, in the
    join's counts as `process` counts them."""
    if null_keys:
        join.metrics.count("null_key", null_keys)
    if late:
        join.metrics.count("late", late)


def takes_interval_runs(join: IntervalJoin) -> bool:
    """Whether `StreamStreamIntervalRun` may take `join`'s records: an interval join (INNER or
    outer) with no residual condition."""
    return join.residual is None


class StreamStreamIntervalRun:
    """The changes of each record of a run, with its index, as `IntervalJoin.process` gives them
    record by record (same stores, matched flags, entry ids, timers, largest times and counts);
    `is_late`, `probe`, the timers' scheduling and `fire_timers` happen inline.

    Per record: a NULL key is counted (and padded at once on a preserved side); otherwise the
    record moves its side's largest time, and so perhaps the clock (the smaller side's largest
    time less the watermark delay); it probes the other side's entries of its key within its
    interval and marks them matched. A record whose window had closed already is counted `late`
    and not stored (padded at once if unmatched on a preserved side); any other is stored with a
    timer: at its window's close if it is unmatched on a preserved side, else at its expiry.
    Then every due timer fires, in due order: a close pads its record if it is still unmatched
    and schedules its expiry; an expiry removes it from its store. What fires goes out with the
    record that moved the clock.

    Timeline, LEFT JOIN, `o.t BETWEEN s.t - 4 AND s.t` (before 0, after 4; a record's window
    closes 5 after its time, where it also expires), delay 0; L orders, R shipments:

        L o1@10                  stored, closes at 15; clock min(10, -inf)
        R s1@13  -> [o1,s1]@13   clock 10; s1 expires at 18
        L o2@16                  stored, closes at 21; clock 13
        R s2@19  -> [o2,s2]@19   clock 16: o1 (closed at 15, matched) leaves the left store
        L o3@8   -> [o3,null]@8  late: its window closed at 13 < 16; probed [8, 12], s1 (13) not in it
    """

    def __init__(self, join: IntervalJoin) -> None:
        self.join = join

    def __call__(self, records: Sequence[RunRecord]) -> list[tuple[int, Change]]:
        join = self.join
        stores, timers, max_ts, reaches, preserved = join.stores, join.timers, join.max_ts, join.reaches, join.preserved
        floor, delay, lag = join.floor, join.config.watermark_delay, join.close_lag
        span = join.before + join.after + join.retention_lag + 1
        gets, puts = _accessors(stores)
        joined: list[tuple[int, Change]] = []
        null_keys = late = 0
        for index, side, key, row, ts, _ in records:
            if key is None:
                null_keys += 1
                if preserved[side]:
                    joined.append((index, padded(side, None, row, ts)))
                continue
            if ts > max_ts[side]:
                max_ts[side] = ts
            now = max(floor, min(max_ts) - delay)
            other, matched = 1 - side, False
            others = gets[other](key)
            if others and _probed(joined, index, side, key, row, ts, others,
                                  max(ts - reaches[other], BEGINNING_OF_TIME), ts + reaches[side]):
                matched = True
                puts[other](key, others)  # the matched flags, persisted
            closes = ts + reaches[side] + lag
            if closes < now:
                late += 1
                if preserved[side] and not matched:
                    joined.append((index, padded(side, key, row, ts)))
            else:
                entry_id = join.next_id
                join.next_id, entries = entry_id + 1, gets[side](key)
                if entries is None:
                    puts[side](key, [[ts, entry_id, row, matched]])
                else:
                    entries.append([ts, entry_id, row, matched])
                    puts[side](key, entries)
                waits = preserved[side] and not matched
                heappush(timers, (closes, entry_id, _CLOSE, side, key) if waits else
                         (max(closes, ts + span), entry_id, _EXPIRE, side, key))
            while timers and timers[0][0] <= now:
                self._fire(index, span, joined, *heappop(timers))
        _counted(join, null_keys, late)
        return joined

    def _fire(self, index: int, span: int, joined: list, due: int, entry_id: int, phase: int, side, key) -> None:
        """A due timer (`fire_timers`): a close pads its still unmatched record into `joined`
        and keeps it until its expiry; an expiry removes the record from its key's entries."""
        store = self.join.stores[side]
        entries = store.get(key)
        if phase == _CLOSE:
            entry = next(entry for entry in entries if entry[1] == entry_id)
            if not entry[3]:
                joined.append((index, padded(side, key, entry[2], entry[0])))
            expires = entry[0] + span
            if expires > due:
                heappush(self.join.timers, (expires, entry_id, _EXPIRE, side, key))
                return
        remaining = [entry for entry in entries if entry[1] != entry_id]
        if remaining:
            store.put(key, remaining)
        else:
            store.delete(key)
