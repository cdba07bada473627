"""The primary-key table-table join over a run of records in one loop: the fast path of
`TableTableJoin.process`, which stays the reference."""

from __future__ import annotations

from typing import Hashable, Sequence

from streamjoin.operators.base import Change, Row, RowKind, Side
from streamjoin.operators.table_table import TableTableJoin

_MAKE = Change._make
_INSERT, _UPDATE, _DELETE = RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE
# A record of a run: (its index in the run, side 0 left / 1 right, join key, row or None for a
# tombstone, ts, anything).
RunRecord = tuple[int, int, Hashable | None, Row | None, int, object]


def takes_runs(join: TableTableJoin) -> bool:
    """Whether `TableTableRun` may take `join`'s records: no residual condition (nothing in the
    loop can fail to evaluate) and no retractions (each record changes its key's result once)."""
    return join.config.residual is None and not join.config.emit_retractions


class TableTableRun:
    """The changes of each record of a run, with its index, as `join.process` gives them record
    by record (same two tables, same counts), with what `process` does in calls (`_result` twice,
    `keyed_result_changes`) inline and the tables reached through their `accessors`.

    Per record: a NULL key is counted and skipped; otherwise the key's result row is worked out
    from both tables' rows before the record and after it (the record's row stored, or deleted
    for a tombstone): [l, r] when both exist, [l, null] or [null, r] where the join type keeps an
    unmatched side, else none. No result before or after: nothing; a new one: INSERT; a changed
    one: UPDATE_AFTER; a lost one: a tombstone of the key. Its time is the later of the record's
    and the other side's current row's.

    Timeline, LEFT JOIN, one key; L left, R right:

        L A@5          -> INSERT [A, null]@5
        R a@3          -> UPDATE_AFTER [A, a]@5   (A's time is the later)
        R tombstone@9  -> UPDATE_AFTER [A, null]@9
        L tombstone@7  -> DELETE@7                 (no right row left)
        L tombstone@8  -> nothing                  (no result row existed)
    """

    def __init__(self, join: TableTableJoin) -> None:
        self.join = join

    def __call__(self, records: Sequence[RunRecord]) -> list[tuple[int, Change]]:
        join = self.join
        keeps_left = join.config.join_type.preserves(Side.LEFT)
        keeps_right = join.config.join_type.preserves(Side.RIGHT)
        (left_get, left_put), (right_get, right_put) = (table.accessors() for table in join.tables)
        deletes = tuple(table.delete for table in join.tables)
        changes: list[tuple[int, Change]] = []
        null_keys = 0
        for index, side, key, row, ts, _ in records:
            if key is None:
                null_keys += 1
                continue
            left, right = left_get(key), right_get(key)
            before = (left is not None and right is not None) or (left is not None and keeps_left) or \
                (right is not None and keeps_right)
            stored = None if row is None else (row, ts)
            if stored is None:
                deletes[side](key)
            elif side == 0:
                left_put(key, stored)
            else:
                right_put(key, stored)
            if side == 0:
                left, other = stored, right
            else:
                right, other = stored, left
            if other is not None and other[1] > ts:
                ts = other[1]
            if left is not None and right is not None:
                changes.append((index, _MAKE((_UPDATE if before else _INSERT, key, left[0], right[0], ts))))
            elif left is not None and keeps_left:
                changes.append((index, _MAKE((_UPDATE if before else _INSERT, key, left[0], None, ts))))
            elif right is not None and keeps_right:
                changes.append((index, _MAKE((_UPDATE if before else _INSERT, key, None, right[0], ts))))
            elif before:
                changes.append((index, _MAKE((_DELETE, key, None, None, ts))))
        if null_keys:
            join.metrics.count("null_key", null_keys)
        return changes
