"""A windowed GROUP BY (ksqlDB `WINDOW TUMBLING|HOPPING (...) GROUP BY`), per task.

Each row counts in every window [start, start + size) that holds its ts (starts are multiples of
`advance_ms`; tumbling: advance = size). A window is open until the task's stream time (the
largest ts it has seen) reaches end + grace; a row for a closed window is late and dropped, as in
Kafka Streams. The result is keyed by the group key followed by the window's start and end, with
the largest ts of the window's rows. EMIT CHANGES emits every update; EMIT FINAL (`emit_final`)
emits each window's row once, when it closes, windows in order of their end.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from streamjoin.operators.base import InMemoryStore, RowKind, Side
from streamjoin.plan.nodes import GroupWindow
from streamjoin.plan.window_nodes import WindowSpec
from streamjoin.runtime.stages import Event, Stage
from streamjoin.runtime.windows import windows_of


@dataclass
class WindowedAggregateStage(Stage):
    plan: Any  # streamjoin.expr.aggregates.AggregatePlan
    alias: str  # the relation the result row travels under
    window: GroupWindow
    groups: InMemoryStore = field(default_factory=InMemoryStore)  # key + (start, end) -> [state, max ts]
    closing: list = field(default_factory=list)  # heap of (end + grace, order, key): when each window closes
    stream_time: int | None = None
    order: int = 0
    metrics: Counter = field(default_factory=Counter)  # `late`: reported with the task's counts

    def on_event(self, event: Event, port: Side) -> list[Event]:
        if event.env is None:  # a keyed deletion carries no row to retract
            return []
        self.stream_time = event.ts if self.stream_time is None else max(self.stream_time, event.ts)
        group = self.plan.group_key(event.env)
        out: list[Event] = []
        for start in self.starts(event.ts):
            end = start + self.window.size_ms
            if end + self.window.grace_ms <= self.stream_time:
                self.metrics["late"] += 1
                continue
            key = group + (start, end)
            entry = self.groups.get(key)
            if entry is None:
                entry = [self.plan.new_state(), event.ts]
                heapq.heappush(self.closing, (end + self.window.grace_ms, self.order, key))
                self.order += 1
            state = entry[0]
            (self.plan.retract if event.kind.is_retraction else self.plan.add)(state, event.env)
            entry[1] = max(entry[1], event.ts)
            self.groups.put(key, entry)
            if not self.window.emit_final:
                out += self._result(key, entry)
        return out + self._close(self.stream_time)

    def on_end(self) -> list[Event]:
        return self._close(None)

    def starts(self, ts: int) -> list[int]:
        """The starts of the windows that hold `ts`, earliest first: Flink's HOP windows (a
        tumbling window hops by its size), none before the epoch."""
        hop = WindowSpec("HOP", self.window.size_ms, self.window.advance_ms)
        return [start for start, _ in windows_of(hop, ts) if start >= 0]

    def _result(self, key: tuple, entry: list) -> list[Event]:
        state, ts = entry
        row = self.plan.result(key, state) if state.rows else None
        was_out, state.emitted = state.emitted, row is not None
        if row is None:  # an empty group, or one HAVING rejects: its row (if out) is deleted
            return [Event(RowKind.DELETE, key, None, ts)] if was_out else []
        return [Event(RowKind.UPDATE_AFTER, key, {self.alias: row}, ts)]

    def _close(self, now: int | None) -> list[Event]:
        """Forget the windows closed at stream time `now` (None: all), emitting them if final."""
        out: list[Event] = []
        while self.closing and (now is None or self.closing[0][0] <= now):
            _, _, key = heapq.heappop(self.closing)
            entry = self.groups.get(key)
            self.groups.delete(key)
            if self.window.emit_final and entry is not None:
                out += self._result(key, entry)
        return out
