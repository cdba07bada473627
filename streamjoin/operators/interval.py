"""Flink SQL interval join: `l.t BETWEEN r.t + lower AND r.t + upper` on event time."""

from __future__ import annotations

from dataclasses import dataclass

from streamjoin.operators.base import BEGINNING_OF_TIME, Change, JoinType, Record, Residual, padded
from streamjoin.operators.stream_stream import TimeBoundedJoin


@dataclass(frozen=True)
class IntervalJoinConfig:
    """`l.t BETWEEN r.t + lower AND r.t + upper` (ms, both bounds inclusive; `r.t - INTERVAL '4'
    HOUR` is lower = -4 h). `watermark_delay`: the sources' `WATERMARK FOR t AS t - delay`.
    lower > upper is an empty interval (Flink accepts it): nothing matches and an outer join
    pads every row of its preserved side(s)."""

    lower: int
    upper: int
    join_type: JoinType = JoinType.INNER
    watermark_delay: int = 0
    residual: Residual | None = None

    def __post_init__(self) -> None:
        if self.watermark_delay < 0:
            raise ValueError(f"watermark delay must not be negative: {self.watermark_delay}")


class IntervalJoin(TimeBoundedJoin):
    """Flink's event-time interval join (INNER, LEFT, RIGHT, FULL), append-only inputs.

    `l.t BETWEEN r.t + lower AND r.t + upper` is the window `l.t - upper <= r.t <= l.t - lower`,
    i.e. before = upper, after = -lower. The clock is the operator watermark: each input's
    watermark is its largest ts minus `watermark_delay`, and a two-input operator takes the
    smaller one (Flink). A record is stored until the watermark passes its window; an unmatched
    record of a preserved side is emitted null-padded (its own ts) once the watermark is strictly
    past its window end (Flink's timer at end + 1). Flink drops nothing: a record whose window
    already passed still probes the stored rows, is not stored, and is emitted null-padded at
    once if unmatched. SQL NULL keys never match (an outer join still emits them padded).

    Timeline, Orders o LEFT JOIN Shipments s, `o.t BETWEEN s.t - 4h AND s.t`, delay 0 (hours):

        L o1@10                 window for shipments: [10, 14]
        R s1@13  -> [o1,s1]@13  watermark = min(10, 13) = 10
        R s4@14  -> [o1,s4]@14  (14 - 10 = 4 h: bounds inclusive)
        L o2@15                 watermark = min(15, 14) = 14
        end of input            watermark -> +inf: [o2,null]@15
    """

    def __init__(self, config: IntervalJoinConfig) -> None:
        super().__init__(config.join_type, before=config.upper, after=-config.lower,
                         residual=config.residual, close_lag=1, retention_lag=0)
        self.config = config
        self.watermark_hold = max(config.upper, -config.lower, 0)
        self.max_ts = [BEGINNING_OF_TIME, BEGINNING_OF_TIME]
        self.floor = BEGINNING_OF_TIME  # set by advance_to (end of input, external watermark)

    def clock(self) -> int:
        return max(self.floor, min(self.max_ts) - self.config.watermark_delay)

    def process(self, record: Record) -> list[Change]:
        if record.value is None:
            self.metrics.count("null_value")
            return []
        if record.key is None:
            self.metrics.count("null_key")
            if self.join_type.preserves(record.side):
                return [padded(record.side, None, record.value, record.ts)]
            return []
        self.max_ts[record.side] = max(self.max_ts[record.side], record.ts)
        if self.is_late(record):
            self.metrics.count("late")
            return self.probe(record, cache=False) + self.fire_timers()
        return self.probe(record, cache=True) + self.fire_timers()

    def advance_to(self, ts: int) -> list[Change]:
        self.floor = max(self.floor, ts)
        return self.fire_timers()
