"""Primary-key table-table join (ksqlDB 1:1, Lenses `SELECT TABLE ... FROM t1 JOIN t2`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from streamjoin.operators.base import Change, InMemoryStore, JoinProcessor, JoinType, Record, Residual, Side, accepts
from streamjoin.operators.changelog import (
    KEYED_JOIN_TYPES,
    ResultRow,
    keyed_result_changes,
    require_join_type,
)


@dataclass(frozen=True)
class TableTableJoinConfig:
    join_type: JoinType = JoinType.INNER
    # Extra ON condition. Not with FULL: a key whose rows fail it would need two result rows
    # ([l, null] and [null, r]), which a table keyed by the join key cannot hold.
    residual: Residual | None = None
    # Flink style: UPDATE_BEFORE before each update and DELETE carrying the old row.
    emit_retractions: bool = False

    def __post_init__(self) -> None:
        require_join_type("a table-table join", self.join_type, KEYED_JOIN_TYPES)
        if self.residual is not None and self.join_type is JoinType.FULL:
            raise ValueError(
                "a FULL primary-key table-table join cannot take a non-key ON condition: "
                "a key whose rows fail it would have two result rows"
            )


class TableTableJoin(JoinProcessor):
    """Joins two tables on their primary key; the result is a table keyed by the same key.

    Inputs are upserts per key (`Record.value` None = tombstone). Both tables are materialized
    (key -> (row, ts)). For each input the result row of its key is computed from the two
    current rows before and after applying it, and the difference is emitted
    (`keyed_result_changes`): a new value is INSERT / UPDATE_AFTER, a tombstone is emitted only
    where a result row existed. The result row of a key is [l, r] when both exist (and the
    residual holds), [l, null] for LEFT/FULL when only l counts, [null, r] for RIGHT/FULL.
    Output ts = the later of the two current rows' ts, the input's own ts standing for its side
    (also for a tombstone). Null keys are counted (`null_key`) and ignored.

    Worked timeline (ksqlDB's semantic table, one key, LEFT JOIN; other join types noted):

        t   left       right      state (l, r)   emitted
        1   tombstone             (-, -)         nothing: no result row existed
        3   A                     (A, -)         +I [A, null] @3
        4              a          (A, a)         +U [A, a] @4
        5   B                     (B, a)         +U [B, a] @5
        6              b          (B, b)         +U [B, b] @6
        7   tombstone             (-, b)         -D tombstone @7   (RIGHT/FULL: +U [null, b])
        8              tombstone  (-, -)         nothing           (RIGHT/FULL: -D tombstone)
        9   C                     (C, -)         +I [C, null] @9
        10             c          (C, c)         +U [C, c] @10
        11             tombstone  (C, -)         +U [C, null] @11  (INNER/RIGHT: -D tombstone)
        12  tombstone             (-, -)         -D tombstone @12
    """

    def __init__(self, config: TableTableJoinConfig) -> None:
        super().__init__()
        self.config = config
        self.tables = (InMemoryStore(), InMemoryStore())  # indexed by Side

    def process(self, record: Record) -> list[Change]:
        if record.key is None:
            self.metrics.count("null_key")
            return []
        key = record.key
        before = self._result(key)
        own = self.tables[record.side]
        if record.value is None:
            own.delete(key)
        else:
            own.put(key, (record.value, record.ts))
        other = self.tables[record.side.other].get(key)
        ts = record.ts if other is None else max(record.ts, other[1])
        return keyed_result_changes(
            key, before, self._result(key), ts, self.config.emit_retractions
        )

    def _result(self, key: Hashable) -> ResultRow | None:
        left = self.tables[Side.LEFT].get(key)
        right = self.tables[Side.RIGHT].get(key)
        join_type = self.config.join_type
        if left and right and accepts(self.config.residual, left[0], right[0]):
            return ResultRow(left[0], right[0])
        if left and join_type.preserves(Side.LEFT):
            return ResultRow(left[0], None)
        if right and join_type.preserves(Side.RIGHT):
            return ResultRow(None, right[0])
        return None
