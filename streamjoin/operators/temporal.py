"""Flink temporal joins: `JOIN t FOR SYSTEM_TIME AS OF o.rowtime | o.proctime`, and the temporal
table function join `LATERAL TABLE (Rates(o.rowtime))`.

A temporal table function join is the event-time (or processing-time) temporal join against its
history table, with right records keyed by the function's primary key (the compiler keys them:
`settings.temporal_table_function.primary_key`); an append-only history is a versioned table
without deletions. No separate operator is needed.
"""

from __future__ import annotations

from dataclasses import dataclass

from streamjoin.operators.asof import AsofCondition, AsofJoin, AsofJoinConfig
from streamjoin.operators.base import Change, InMemoryStore, JoinProcessor, JoinType, Record, Residual, RowKind, Side, accepts
from streamjoin.operators.changelog import require_join_type


@dataclass(frozen=True)
class TemporalJoinConfig:
    join_type: JoinType = JoinType.INNER
    # Event time only: watermark delay (ms) of the probe (left) and versioned (right) inputs.
    left_delay: int = 0
    right_delay: int = 0
    # Extra ON condition, evaluated against the version the probe row's time selects.
    residual: Residual | None = None

    def __post_init__(self) -> None:
        require_join_type("a temporal join", self.join_type, (JoinType.INNER, JoinType.LEFT))

    def as_asof(self) -> AsofJoinConfig:
        return AsofJoinConfig(
            self.join_type, AsofCondition.GE, self.left_delay, self.right_delay, self.residual
        )


class EventTimeTemporalJoin(AsofJoin):
    """Each probe (left) row joins the version of the versioned table (right: an upsert
    changelog keyed by its primary key, `Record.value` None = deletion) valid at the probe's
    time: the latest version with ts <= probe ts, none if that version is a deletion.

    This is the ASOF join with condition `>=` whose right history keeps deletions as versions
    (see `AsofJoin` for state and cleanup). Probe rows wait until the watermark (min over both
    inputs of max ts seen minus that input's delay) passes their time, then are emitted in time
    order with ts = the probe's time; versions older than the watermark are dropped except the
    latest one before it. `advance_to(END_OF_TIME)` (bounded input) flushes every probe row.

    Worked timeline (Flink's product_changelog example, LEFT JOIN, delays 0):

        arrival                       W      emitted
        right p_001 11.11 @00:01      -inf   -
        left  o_001 p_001 @00:01      00:01  - (waits: 00:01 is not < W)
        right p_002 23.11 @00:02      00:01  -
        left  o_002 p_002 @00:03      00:02  +I [o_001, 11.11] @00:01
        right p_001 12.99 @12:00      00:03  -
        right p_002 19.99 @12:00      00:03  -
        left  o_003 p_001 @12:00      12:00  +I [o_002, 23.11] @00:03
        left  o_004 p_002 @12:00      12:00  -
        right p_001 deleted @18:00    12:00  -
        left  o_005 p_001 @18:00      18:00  +I [o_003, 12.99], +I [o_004, 19.99] @12:00
        advance_to(END_OF_TIME)       end    +I [o_005, null] @18:00 (p_001 deleted at 18:00)
    """

    right_tombstones_are_versions = True

    def __init__(self, config: TemporalJoinConfig) -> None:
        super().__init__(config.as_asof())


class ProcessingTimeTemporalJoin(JoinProcessor):
    """Each probe (left) row joins the latest version of the right table at its arrival: the
    right side is a HashMap key -> latest row (an upsert; `value` None deletes), probe rows are
    joined immediately and never stored, and later right changes do not touch past results.
    Output ts = the probe record's ts. Null keys / values are counted; a LEFT join still emits a
    null-key probe row, padded.

    Worked timeline (Flink's LatestRates example, INNER):

        arrival                 rates                    emitted
        right Euro 114          {Euro: 114}              -
        left  2 Euro            {Euro: 114}              +I [2 Euro, 114]
        right Euro 116          {Euro: 116}              -
        left  2 Euro            {Euro: 116}              +I [2 Euro, 116]
    """

    def __init__(self, config: TemporalJoinConfig) -> None:
        super().__init__()
        self.config = config
        self.latest = InMemoryStore()  # right key -> latest row

    def process(self, record: Record) -> list[Change]:
        if record.key is None:
            self.metrics.count("null_key")
            if record.side is Side.RIGHT or self.config.join_type is JoinType.INNER:
                return []
        if record.side is Side.RIGHT:
            if record.value is None:
                self.latest.delete(record.key)
            else:
                self.latest.put(record.key, record.value)
            return []
        if record.value is None:
            self.metrics.count("null_value")
            return []
        right = None if record.key is None else self.latest.get(record.key)
        if right is not None and not accepts(self.config.residual, record.value, right):
            right = None
        if right is None and self.config.join_type is JoinType.INNER:
            return []
        return [Change(RowKind.INSERT, record.key, record.value, right, record.ts)]
