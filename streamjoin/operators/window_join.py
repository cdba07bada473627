"""SQLstream s-Server stream-stream joins: each input has its own window (`OVER (RANGE ...)` or
`OVER (ROWS ...)`), and the joined stream's clock is the lower of the two inputs' clocks."""

from __future__ import annotations

import heapq
from collections import deque
from dataclasses import dataclass
from typing import Hashable

from streamjoin.operators.base import BEGINNING_OF_TIME, Change, JoinProcessor, JoinType, Record, Residual, RowKind, Side, accepts, oriented, padded


@dataclass(frozen=True)
class RangeWindow:
    """`RANGE [BETWEEN INTERVAL 'a' PRECEDING AND] (INTERVAL 'b' PRECEDING | CURRENT ROW)` (ms):
    at instant T the window holds the rows with `T - preceding <= rowtime <= T - until`.
    The default window of a stream without OVER is `RANGE CURRENT ROW` = RangeWindow(0)."""

    preceding: int
    until: int = 0

    def __post_init__(self) -> None:
        if not 0 <= self.until <= self.preceding:
            raise ValueError(f"RANGE window must have 0 <= until <= preceding: {self}")


@dataclass(frozen=True)
class RowsWindow:
    """`ROWS n PRECEDING` / `ROWS BETWEEN n PRECEDING AND CURRENT ROW`: the latest n + 1 rows of
    the stream (all keys: the window is over the stream, not per join key)."""

    preceding: int

    def __post_init__(self) -> None:
        if self.preceding < 0:
            raise ValueError(f"ROWS window must not be negative: {self}")


JoinWindow = RangeWindow | RowsWindow
CURRENT_ROW = RangeWindow(0)


@dataclass(frozen=True)
class WindowJoinConfig:
    left_window: JoinWindow = CURRENT_ROW
    right_window: JoinWindow = CURRENT_ROW
    join_type: JoinType = JoinType.INNER  # CROSS ignores the keys
    residual: Residual | None = None

    def entry_delay(self, side: Side) -> int:
        """How long after its rowtime a row of `side` enters its window."""
        window = (self.left_window, self.right_window)[side]
        return window.until if isinstance(window, RangeWindow) else 0


_ANY_KEY = ()  # the one join key of a CROSS join


class _SideWindow:
    """The rows of one input currently in its window: arrival order, plus an index by key."""

    def __init__(self, window: JoinWindow) -> None:
        self.window = window
        self.rows: deque[tuple[int, Hashable, dict, int]] = deque()  # (rowtime, key, row, seq)
        self.by_key: dict[Hashable, deque[tuple[int, Hashable, dict, int]]] = {}

    def add(self, entry: tuple[int, Hashable, dict, int]) -> None:
        self.rows.append(entry)
        self.by_key.setdefault(entry[1], deque()).append(entry)
        if isinstance(self.window, RowsWindow) and len(self.rows) > self.window.preceding + 1:
            self._evict_oldest()

    def slide_to(self, instant: int) -> None:
        """Drop the RANGE rows that left the window for good by `instant`."""
        if isinstance(self.window, RangeWindow):
            while self.rows and self.rows[0][0] + self.window.preceding < instant:
                self._evict_oldest()

    def matches(self, key: Hashable) -> deque:
        return self.by_key.get(key, deque())

    def _evict_oldest(self) -> None:
        entry = self.rows.popleft()
        same_key = self.by_key[entry[1]]
        same_key.popleft()  # rows of a key are in arrival order too, so it is the oldest
        if not same_key:
            del self.by_key[entry[1]]


class WindowJoin(JoinProcessor):
    """s-Server windowed stream-stream join: INNER, LEFT, RIGHT, FULL, CROSS (RANGE or ROWS per side).

    A pair (l, r) is emitted once, at the first instant T at which both rows are in their
    windows, with rowtime T: for `... PRECEDING` / `CURRENT ROW` windows that is the later input
    rowtime, and the earlier row must still be in its own window then (endpoints included).
    Rows wait in a buffer until the joined stream clock, the lower of the two inputs' latest
    rowtimes, reaches the instant they enter their window; they are then processed in instant
    order, so each sees exactly the other input's window at its instant. A row of a preserved
    side with no pair at its instant is emitted null-padded at that instant; a later pair is a
    separate row. A row whose instant is already behind the processed instants is late (s-Server
    streams are rowtime-ordered): dropped and counted. Null join keys never match.

    Timeline, both sides RANGE 1 MINUTE PRECEDING, LEFT JOIN on ticker (the doc's data, mm:ss):

        L IBM 750@02:10, R IBM 75@02:10   clock 02:10 -> [750,75]@02:10
        L GOOGL 1000@03:15                clock min(03:15, 03:10): waits
        R MSFT 100@03:15                  clock 03:15 -> [1000,null]@03:15 (no GOOGL price yet)
        L GOOGL 2000@03:20, R GOOGL 100@03:20 -> [1000,100]@03:20, [2000,100]@03:20
        L MSFT 1000@03:28                 clock min(03:28, 03:20): not emitted yet
    """

    def __init__(self, config: WindowJoinConfig) -> None:
        super().__init__()
        self.config = config
        self.windows = (_SideWindow(config.left_window), _SideWindow(config.right_window))
        self.input_clocks = [BEGINNING_OF_TIME, BEGINNING_OF_TIME]
        self.processed_instant = BEGINNING_OF_TIME
        self.pending: list[tuple[int, int, Side, Hashable, dict, int]] = []  # heap by (instant, seq)
        self.next_seq = 0

    @property
    def output_clock(self) -> int:
        """The joined stream's clock: no later output can have a smaller rowtime. A chained join
        passes it on with `advance_side`."""
        return min(self.input_clocks)

    def process(self, record: Record) -> list[Change]:
        if record.value is None:
            self.metrics.count("null_value")
            return []
        instant = record.ts + self.config.entry_delay(record.side)
        if instant < self.processed_instant:
            self.metrics.count("late")
            return []
        key = _ANY_KEY if self.config.join_type is JoinType.CROSS else record.key
        heapq.heappush(self.pending, (instant, self.next_seq, record.side, key, record.value, record.ts))
        self.next_seq += 1
        return self.advance_side(record.side, record.ts)

    def advance_side(self, side: Side, ts: int) -> list[Change]:
        """Input `side` will bring no row before `ts` (a record, or an upstream join's clock)."""
        self.input_clocks[side] = max(self.input_clocks[side], ts)
        return self._drain()

    def advance_to(self, ts: int) -> list[Change]:
        for side in Side:
            self.input_clocks[side] = max(self.input_clocks[side], ts)
        return self._drain()

    def _drain(self) -> list[Change]:
        out: list[Change] = []
        clock = self.output_clock
        while self.pending and self.pending[0][0] <= clock:
            instant = self.pending[0][0]
            group = []
            while self.pending and self.pending[0][0] == instant:
                group.append(heapq.heappop(self.pending))
            self.processed_instant = instant
            out += self._enter_instant(instant, group)
        return out

    def _enter_instant(self, instant: int, group: list) -> list[Change]:
        """The rows of `group` enter their windows at `instant`, one after the other, each paired
        with the other window as it is then (so a same-instant pair appears once). Whether a row
        is unmatched is decided once the whole instant is in."""
        out: list[Change] = []
        unmatched = {}  # seq -> (side, key, row) of this instant's rows without a pair so far
        for _, seq, side, key, row, rowtime in group:
            other = self.windows[side.other]
            other.slide_to(instant)
            result_key = None if key is _ANY_KEY else key
            paired = False
            if key is not None:
                for _, _, other_row, other_seq in other.matches(key):
                    left, right = oriented(side, row, other_row)
                    if accepts(self.config.residual, left, right):
                        out.append(Change(RowKind.INSERT, result_key, left, right, instant))
                        unmatched.pop(other_seq, None)
                        paired = True
            if not paired:
                unmatched[seq] = (side, result_key, row)
            self.windows[side].slide_to(instant)
            self.windows[side].add((rowtime, key, row, seq))
        for side, key, row in unmatched.values():
            if self.config.join_type.preserves(side):
                out.append(padded(side, key, row, instant))
        return out
