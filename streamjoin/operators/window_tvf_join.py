"""Flink's window join: two windowed inputs (rows of a windowing table function TUMBLE / HOP /
CUMULATE, or of a window aggregate over one) joined on `window_start` and `window_end` plus keys,
each window joined once, when the watermark passes its end."""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable, Hashable

from streamjoin.operators.base import (
    BEGINNING_OF_TIME, Change, InMemoryStore, JoinProcessor, JoinType, Record, Residual, Row, RowKind, Side,
    accepts, padded,
)
from streamjoin.operators.changelog import FILTERING_JOIN_TYPES, KEYED_JOIN_TYPES, require_join_type

WindowEnd = Callable[[Row], int]  # a row's window_end, epoch ms


@dataclass(frozen=True)
class WindowTvfJoinConfig:
    """`left_window_end` / `right_window_end` read a row's window end (the inputs' window_end
    columns); the join key (Record.key) holds the window_start / window_end equalities and the
    other equi keys; `residual` the rest of the condition."""

    left_window_end: WindowEnd
    right_window_end: WindowEnd
    join_type: JoinType = JoinType.INNER
    residual: Residual | None = None

    def __post_init__(self) -> None:
        require_join_type("a window join", self.join_type, KEYED_JOIN_TYPES + FILTERING_JOIN_TYPES)

    def window_end(self, side: Side) -> WindowEnd:
        return self.left_window_end if side is Side.LEFT else self.right_window_end


class WindowTvfJoin(JoinProcessor):
    """Flink's window join (INNER, LEFT, RIGHT, FULL; SEMI / ANTI for IN / EXISTS subqueries).

    Rows are kept per window (its end) and join key until the operator's watermark (the lower of
    the two inputs' watermarks, given by `advance_watermark`) reaches the window's last
    millisecond, `window_end - 1`. Then the window is joined at once and forgotten: every pair
    of a key that passes the residual; unmatched rows of a preserved side padded; SEMI / ANTI
    the left rows with / without a match, each once. Output ts = window_end - 1 (window_time).
    A row whose window has already been joined is late: dropped and counted. A NULL join key
    matches nothing (its rows still come out padded, or ANTI).

    Timeline, LEFT JOIN on name, TUMBLE 5 s windows (seconds; W = operator watermark):

        arrival                  W      emitted
        L a@1  window [0, 5)     -inf   -
        R a@2  window [0, 5)     -inf   -
        L b@3  window [0, 5)     -inf   -
        watermark L 4.999, R 6   4.999  [a, a] @4.999, [b, null] @4.999   (window [0, 5) fires)
        R b@4  window [0, 5)     4.999  - late: its window was joined, dropped (late = 1)
        L c@7  window [5, 10)    4.999  -
        end of input             end    [c, null] @9.999
    """

    needs_watermarks = True

    def __init__(self, config: WindowTvfJoinConfig) -> None:
        super().__init__()
        self.config = config
        self.watermarks = [BEGINNING_OF_TIME, BEGINNING_OF_TIME]
        self.fired_up_to = BEGINNING_OF_TIME  # the operator watermark the windows were fired at
        self.windows = InMemoryStore()  # (window_end, key) -> ([left rows], [right rows])
        self.keys_of = InMemoryStore()  # window_end -> [keys], in arrival order
        self.ends: list[int] = []  # heap of the window ends held

    def process(self, record: Record) -> list[Change]:
        if record.value is None or record.kind.is_retraction:
            self.metrics.count("null_value" if record.value is None else "retraction")
            return []
        end = self.config.window_end(record.side)(record.value)
        if end - 1 <= self.fired_up_to:
            self.metrics.count("late")
            return []
        slot = (end, record.key)
        rows = self.windows.get(slot)
        if rows is None:
            rows = ([], [])
            keys = self.keys_of.get(end)
            if keys is None:
                heapq.heappush(self.ends, end)
                keys = []
            keys.append(record.key)
            self.keys_of.put(end, keys)  # changed in place: put back (the KeyValueStore contract)
        rows[record.side].append(record.value)
        self.windows.put(slot, rows)
        return []

    def advance_watermark(self, side: Side, watermark: int) -> list[Change]:
        self.watermarks[side] = max(self.watermarks[side], watermark)
        return self.advance_to(min(self.watermarks))

    def advance_to(self, ts: int) -> list[Change]:
        self.fired_up_to = max(self.fired_up_to, ts)
        out: list[Change] = []
        while self.ends and self.ends[0] - 1 <= self.fired_up_to:
            end = heapq.heappop(self.ends)
            for key in self.keys_of.get(end):
                lefts, rights = self.windows.get((end, key))
                self.windows.delete((end, key))
                out += self._join(key, lefts, rights, end - 1)
            self.keys_of.delete(end)
        return out

    def _join(self, key: Hashable | None, lefts: list[Row], rights: list[Row], ts: int) -> list[Change]:
        join_type, residual = self.config.join_type, self.config.residual
        matched_rights: set[int] = set()
        out: list[Change] = []
        for left in lefts:
            matches = [] if key is None else [i for i, right in enumerate(rights) if accepts(residual, left, right)]
            if join_type.filters_left:
                if bool(matches) == (join_type is JoinType.SEMI):
                    out.append(Change(RowKind.INSERT, key, left, None, ts))
                continue
            out += [Change(RowKind.INSERT, key, left, rights[i], ts) for i in matches]
            matched_rights.update(matches)
            if not matches and join_type.preserves(Side.LEFT):
                out.append(padded(Side.LEFT, key, left, ts))
        if join_type.preserves(Side.RIGHT):
            out += [padded(Side.RIGHT, key, right, ts) for i, right in enumerate(rights) if i not in matched_rights]
        return out

