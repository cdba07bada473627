"""A session-windowed GROUP BY (ksqlDB `WINDOW SESSION (gap) ... GROUP BY`), per task, with the
semantics of Kafka Streams' session windows.

A session of a group is [start, end]: the times of its first and last rows, both inclusive. A
row at ts belongs with every session of its group that ends at ts - gap or later and starts at
ts + gap or earlier: none makes a new session [ts, ts]; one takes the row and stretches to hold
ts; two (ts bridges them) become one session, their accumulators merged. So two sessions of a
group are always more than `gap` apart.

Stream time is the largest ts the task has seen. A row whose session (after merging) would end
before stream time - gap - grace is late: dropped and counted (`late`). A session closes, and is
forgotten, when stream time reaches end + gap + grace, when Kafka Streams' session store (kept for
gap + grace) drops it and ksqlDB's EMIT FINAL emits it. At that very instant a row at or after
its end is not late, but starts a session of its own.

EMIT CHANGES: each accepted row deletes every session it replaced (a tombstone of its windowed
key, with that session's end as ts) and then emits its session's row, keyed by the group key and
(start, end), with the session's end as ts. A row that falls inside a session replaces it too
(tombstone, then the same key's new row); only a row at the instant of a one-row session [ts, ts]
overwrites it without a tombstone. EMIT FINAL: nothing on update; each session's row once, when
it closes (no tombstones: a replaced session was never out).

Timeline, SESSION (10 SECONDS, GRACE PERIOD 5 SECONDS), COUNT(*) GROUP BY user, user a, seconds:

    row    stream time  sessions after              emitted (EMIT CHANGES)
    a@0    0            [0,0]:1                     +[0,0] 1 @0
    a@8    8            [0,8]:2                     -[0,0] @0, +[0,8] 2 @8        (stretched)
    a@5    8            [0,8]:3                     -[0,8] @8, +[0,8] 3 @8        (inside)
    a@30   30           [0,8]:3 [30,30]:1           +[30,30] 1 @30                (22 s after 8)
      ... stream time 30 >= 8 + 10 + 5: [0,8] closes (EMIT FINAL: +[0,8] 3 @8)
    a@22   30           [22,30]:2                   -[30,30] @30, +[22,30] 2 @30  (out of order)
    a@44   44           [22,30]:2 [44,44]:1         +[44,44] 1 @44   ([22,30] open until 45)
    a@38   44           [22,44]:4                   -[22,30] @30, -[44,44] @44, +[22,44] 4 @44 (bridge)
    a@10   44           (unchanged)                 late: [10,10] ends before 44 - 10 - 5
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from streamjoin.operators.base import InMemoryStore, RowKind, Side
from streamjoin.plan.nodes import GroupWindow
from streamjoin.runtime.stages import Event, Stage


@dataclass
class SessionAggregateStage(Stage):
    plan: Any  # streamjoin.expr.aggregates.AggregatePlan, compiled with merging
    alias: str  # the relation the result row travels under
    window: GroupWindow  # kind SESSION: size_ms is the inactivity gap
    # group key -> its open sessions [start, end, GroupState], by start (put back when changed)
    sessions: InMemoryStore = field(default_factory=InMemoryStore)
    closing: list = field(default_factory=list)  # heap of (end + gap + grace, order, group, start, end)
    stream_time: int | None = None
    order: int = 0
    metrics: Counter = field(default_factory=Counter)

    def on_event(self, event: Event, port: Side) -> list[Event]:
        if event.env is None or event.kind.is_retraction:
            # the planner gives a session window append-only input; a null value has no row
            self.metrics["window_retraction" if event.kind.is_retraction else "null_value"] += 1
            return []
        ts, gap = event.ts, self.window.size_ms
        self.stream_time = ts if self.stream_time is None else max(self.stream_time, ts)
        group = self.plan.group_key(event.env)
        held = self.sessions.get(group) or []
        found = [s for s in held if s[1] >= ts - gap and s[0] <= ts + gap]
        start, end = min([ts, *(s[0] for s in found)]), max([ts, *(s[1] for s in found)])
        if end < self.stream_time - gap - self.window.grace_ms:
            self.metrics["late"] += 1
            return self._close(self.stream_time)
        out: list[Event] = []
        state = self.plan.new_state()
        replaced = (start, end) != (ts, ts)
        for old_start, old_end, old_state in found:
            if replaced and old_state.emitted:
                out.append(Event(RowKind.DELETE, group + (old_start, old_end), None, old_end))
            elif not replaced:  # the same one-row session: its row stays out, overwritten
                state.emitted = old_state.emitted
            self.plan.merge(state, old_state)
        self.plan.add(state, event.env)
        held = [s for s in held if all(s is not f for f in found)]
        bisect.insort(held, [start, end, state], key=lambda s: s[0])
        self.sessions.put(group, held)
        if not any((s[0], s[1]) == (start, end) for s in found):  # new bounds: a new closing time
            heapq.heappush(self.closing, (end + gap + self.window.grace_ms, self.order, group, start, end))
            self.order += 1
        if not self.window.emit_final:
            out += self._row(group, start, end, state)
        return out + self._close(self.stream_time)

    def on_end(self) -> list[Event]:
        return self._close(None)

    def _row(self, group: tuple, start: int, end: int, state) -> list[Event]:
        key = group + (start, end)
        row = self.plan.result(key, state)
        was_out, state.emitted = state.emitted, row is not None
        if row is None:  # HAVING rejects the session: its row (if out) is deleted
            return [Event(RowKind.DELETE, key, None, end)] if was_out else []
        return [Event(RowKind.UPDATE_AFTER, key, {self.alias: row}, end)]

    def _close(self, now: int | None) -> list[Event]:
        """Forget the sessions closed at stream time `now` (None: all), emitting them if final.
        A heap entry whose session was replaced since finds no session with its bounds."""
        out: list[Event] = []
        while self.closing and (now is None or self.closing[0][0] <= now):
            _, _, group, start, end = heapq.heappop(self.closing)
            held = self.sessions.get(group) or []
            session = next((s for s in held if (s[0], s[1]) == (start, end)), None)
            if session is None:
                continue
            held = [s for s in held if s is not session]
            if held:
                self.sessions.put(group, held)
            else:
                self.sessions.delete(group)
            if self.window.emit_final:
                out += self._row(group, start, end, session[2])
        return out
