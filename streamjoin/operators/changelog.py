"""Shared pieces of the table-result and temporal joins: the join-type check and the diff that
turns "the result row of a key before / after an input" into changelog rows.

A keyed join result (table-table, foreign-key) is never stored: it is a pure function of the
input tables' current rows, so the operator computes the row before and after each input and
emits the difference, ksqlDB style (INSERT / UPDATE_AFTER for a new value, a DELETE tombstone
only where a result row existed) with optional Flink-style UPDATE_BEFORE retractions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable

from streamjoin.operators.base import Change, JoinType, Row, RowKind

# Every join type that pairs rows by key (CROSS pairs every row and belongs to window joins).
KEYED_JOIN_TYPES = (JoinType.INNER, JoinType.LEFT, JoinType.RIGHT, JoinType.FULL)
# ... and those whose result is the left rows that do (SEMI) or do not (ANTI) match.
FILTERING_JOIN_TYPES = (JoinType.SEMI, JoinType.ANTI)


def require_join_type(operator: str, join_type: JoinType, allowed: tuple[JoinType, ...]) -> None:
    if join_type not in allowed:
        names = ", ".join(t.value for t in allowed)
        raise ValueError(f"{operator} supports {names} joins, not {join_type.value}")


@dataclass(frozen=True)
class ResultRow:
    """The joined rows a result key currently maps to (one side may be None: null-padded)."""

    left: Row | None
    right: Row | None


def keyed_result_changes(
    key: Hashable,
    before: ResultRow | None,
    after: ResultRow | None,
    ts: int,
    emit_retractions: bool,
) -> list[Change]:
    """The changelog rows that move a keyed result from `before` to `after`.

    Nothing -> row: INSERT. Row -> row: UPDATE_AFTER (preceded by UPDATE_BEFORE of the old row
    when `emit_retractions`). Row -> nothing: DELETE, a bare tombstone unless `emit_retractions`,
    in which case it carries the retracted row (Flink -D). Nothing -> nothing: no output, which is
    why an input tombstone for an absent result emits nothing (ksqlDB semantic table).
    """
    if before is None and after is None:
        return []
    if before is None:
        return [Change(RowKind.INSERT, key, after.left, after.right, ts)]
    if after is None:
        if emit_retractions:
            return [Change(RowKind.DELETE, key, before.left, before.right, ts)]
        return [Change(RowKind.DELETE, key, None, None, ts)]
    update = Change(RowKind.UPDATE_AFTER, key, after.left, after.right, ts)
    if emit_retractions:
        return [Change(RowKind.UPDATE_BEFORE, key, before.left, before.right, ts), update]
    return [update]
