"""Plan nodes of Flink's windowing: the windowing table functions, window aggregation and the
window join (the rest of the plan's nodes: nodes.py)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from streamjoin.plan.nodes import Aggregate, Join, PlanNode


@dataclass(frozen=True)
class WindowSpec:
    """A Flink windowing table function's windows (ms): TUMBLE(size), HOP(slide = step, size) or
    CUMULATE(step, size), each shifted by `offset`."""

    kind: str  # TUMBLE | HOP | CUMULATE
    size_ms: int
    step_ms: int  # TUMBLE: the size
    offset_ms: int = 0


@dataclass(frozen=True, eq=False)
class WindowAssign(PlanNode):
    """Flink `TABLE(TUMBLE|HOP|CUMULATE(TABLE t, DESCRIPTOR(time), ...))`: each row of relation
    `alias` once per window its `time` falls in, with the columns window_start, window_end and
    window_time (= window_end - 1 ms). For a TIMESTAMP_LTZ time, windows are aligned in
    `time_zone` (the session's `table.local-time-zone`)."""

    child: PlanNode | None = None
    alias: str = ""
    time: exp.Expr | None = None
    window: WindowSpec | None = None
    time_zone: str | None = None  # set only for a TIMESTAMP_LTZ time attribute

    @property
    def children(self):
        return (self.child,)


@dataclass(frozen=True, eq=False)
class WindowTvfJoin(Join):
    """Flink window join of two windowed inputs on window_start, window_end (in the keys) and
    more: each window joined once when the watermark passes its end. left_window_end /
    right_window_end: the inputs' window_end columns."""

    left_window_end: exp.Expr | None = None
    right_window_end: exp.Expr | None = None
    window: WindowSpec | None = None


@dataclass(frozen=True, eq=False)
class WindowAggregate(Aggregate):
    """Flink window aggregation (GROUP BY window_start, window_end, ... of a windowed input): each
    window's groups emitted once, final, when the watermark passes the window's end (append
    only); `window_end` is the input's window_end column."""

    window_end: exp.Expr | None = None


__all__ = ["WindowAggregate", "WindowAssign", "WindowSpec", "WindowTvfJoin"]
