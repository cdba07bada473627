"""Flink's windowing in the task pipeline: the windowing table functions (TUMBLE, HOP, CUMULATE)
and window aggregation, which emits each window's groups once, when the watermark passes the
window's end. (The window join is an operator: operators/window_tvf_join.py.)"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Callable
from zoneinfo import ZoneInfo

from streamjoin.expr.core import Env
from streamjoin.operators.base import END_OF_TIME, InMemoryStore, RowKind, Side
from streamjoin.plan.window_nodes import WindowSpec
from streamjoin.runtime.stages import Event, Stage

def windows_of(spec: WindowSpec, t: int) -> list[tuple[int, int]]:
    """The [start, end) windows (ms) that time `t` belongs to, earliest end first.

        TUMBLE(5 s, offset 1 s)     t = 6 s   -> [6, 11)
        HOP(slide 2 s, size 4 s)    t = 5 s   -> [2, 6), [4, 8)
        CUMULATE(step 2 s, size 6 s) t = 3 s  -> [0, 4), [0, 6)
    """
    if spec.kind == "TUMBLE":
        start = t - (t - spec.offset_ms) % spec.size_ms
        return [(start, start + spec.size_ms)]
    if spec.kind == "HOP":
        last = t - (t - spec.offset_ms) % spec.step_ms
        starts = range(last, t - spec.size_ms, -spec.step_ms)
        return sorted((start, start + spec.size_ms) for start in starts)
    start = t - (t - spec.offset_ms) % spec.size_ms  # CUMULATE: windows grow from the same start
    first = start + spec.step_ms * ((t - start) // spec.step_ms + 1)
    return [(start, end) for end in range(first, start + spec.size_ms + 1, spec.step_ms)]


def zone_offset(time_zone: str) -> Callable[[int], int]:
    """ms to add to an instant (epoch ms) to get the wall-clock time of `time_zone` as epoch ms."""
    zone = ZoneInfo(time_zone)

    def offset(instant: int) -> int:
        moment = datetime.fromtimestamp(instant / 1000, tz=timezone.utc).astimezone(zone)
        return int(moment.utcoffset().total_seconds() * 1000)

    return offset


@dataclass
class WindowAssignStage(Stage):
    """A windowing table function: each row once per window its time falls in, with
    window_start and window_end (TIMESTAMP) and window_time (= window_end - 1 ms, a time
    attribute). A TIMESTAMP_LTZ time is windowed on the wall clock of the session time zone
    (`local`): the bounds are that wall-clock time, window_time its instant."""

    alias: str
    time: Callable[[Env], Any]  # the DESCRIPTOR column, epoch ms
    window: WindowSpec
    local: Callable[[int], int] | None = None  # TIMESTAMP_LTZ: instant -> wall-clock offset (ms)
    metrics: Counter = field(default_factory=Counter)

    def on_event(self, event: Event, port: Side) -> list[Event]:
        if event.env is None or event.kind.is_retraction:  # windowing reads append-only input
            self.metrics["window_retraction"] += 1
            return []
        t = self.time(event.env)
        if t is None:
            self.metrics["null_time"] += 1
            return []
        shift = self.local(t) if self.local else 0
        out = []
        for start, end in windows_of(self.window, t + shift):
            row = {**event.env[self.alias], "window_start": start, "window_end": end, "window_time": end - 1 - shift}
            out.append(Event(event.kind, event.key, {**event.env, self.alias: row}, event.ts))
        return out


@dataclass
class WindowAggregateStage(Stage):
    """GROUP BY window_start, window_end, ... over windowed rows: accumulators per (window end,
    group) until the watermark reaches window_end - 1, then each group's final row is emitted
    once (INSERT, ts = window_end - 1) and the window forgotten. A row of a window already
    emitted is late: dropped and counted.

    Timeline, TUMBLE 5 s, COUNT(*) GROUP BY name, window_start, window_end (seconds):

        a@1, a@2, b@3       [0, 5): a 2, b 1 held
        watermark 4.999     -> (a, 0, 5, 2) @4.999, (b, 0, 5, 1) @4.999
        a@4                 late: [0, 5) was emitted (late = 1)
        a@6                 [5, 10): a 1 held; end of input -> (a, 5, 10, 1) @9.999
    """

    plan: Any  # streamjoin.expr.aggregates.AggregatePlan
    alias: str  # the relation the result row travels under
    window_end: Callable[[Env], Any]
    groups: InMemoryStore = field(default_factory=InMemoryStore)  # (window end, group key) -> state
    keys_of: InMemoryStore = field(default_factory=InMemoryStore)  # window end -> [group keys]
    ends: list[int] = field(default_factory=list)  # heap of the window ends held
    metrics: Counter = field(default_factory=Counter)
    needs_watermarks = True

    def on_event(self, event: Event, port: Side) -> list[Event]:
        if event.env is None or event.kind.is_retraction:
            self.metrics["window_retraction"] += 1
            return []
        end = self.window_end(event.env)
        if end - 1 <= self.watermark:
            self.metrics["late"] += 1
            return []
        key = self.plan.group_key(event.env)
        state = self.groups.get((end, key))
        if state is None:
            state = self.plan.new_state()
            keys = self.keys_of.get(end)
            if keys is None:
                heapq.heappush(self.ends, end)
                keys = []
            keys.append(key)
            self.keys_of.put(end, keys)  # changed in place: put back (the KeyValueStore contract)
        self.plan.add(state, event.env)
        self.groups.put((end, key), state)
        return []

    def on_watermark(self, watermark: int, port: Side) -> list[Event]:
        self.watermark = max(self.watermark, watermark)
        out = []
        while self.ends and self.ends[0] - 1 <= self.watermark:
            end = heapq.heappop(self.ends)
            for key in self.keys_of.get(end):
                state = self.groups.get((end, key))
                self.groups.delete((end, key))
                row = self.plan.result(key, state)
                if row is not None:  # None: HAVING rejects the group
                    out.append(Event(RowKind.INSERT, key, {self.alias: row}, end - 1))
            self.keys_of.delete(end)
        return out

    def on_end(self) -> list[Event]:
        return self.on_watermark(END_OF_TIME, Side.LEFT)
