"""The closed sets several layers share, at the bottom of the chain (as Flink shares its join type
between planner and runtime): what a relation is and how a join treats unmatched rows (string
enums: a member equals, hashes and prints as its value, "stream", "LEFT", as SQL, EXPLAIN and the
catalog write it); how a query runs and what a run does when its checkpoint points outside the
log (literals: they travel as configuration text)."""

from __future__ import annotations

import enum
from typing import Literal, get_args

# available_now: everything new, then stop; continuous: until stopped (app.engine.Engine.run)
RunMode = Literal["available_now", "continuous"]
RUN_MODES: tuple[RunMode, ...] = get_args(RunMode)
# A checkpoint offset outside the log (retention deleted it, the topic was recreated): fail the
# run, or go on from the log's earliest or latest offset (kafka.offsets)
DataLossPolicy = Literal["fail", "earliest", "latest"]
DATA_LOSS_POLICIES: tuple[DataLossPolicy, ...] = get_args(DataLossPolicy)


class Kind(enum.StrEnum):
    """What a relation (a declared source, a plan node, a join input) is."""

    STREAM = "stream"  # an append-only sequence of records
    TABLE = "table"  # a changelog: the latest row per key
    VERSIONED_TABLE = "versioned_table"  # Flink: a table with its rows' history, read as of a time


class JoinType(enum.StrEnum):
    INNER = "INNER"
    LEFT = "LEFT"
    RIGHT = "RIGHT"
    FULL = "FULL"
    CROSS = "CROSS"  # every pair (no key); only the s-Server window join accepts it
    SEMI = "SEMI"  # a left row that has a match, once (`IN` / `EXISTS` subquery)
    ANTI = "ANTI"  # a left row that has no match (`NOT IN` / `NOT EXISTS` subquery)

    def preserves(self, side: enum.Enum) -> bool:
        """Whether an unmatched row of `side` (operators.base.Side) is emitted null-padded."""
        return self is JoinType.FULL or self.value == side.name

    @property
    def filters_left(self) -> bool:
        """SEMI / ANTI: the result is left rows, kept or dropped by whether they match."""
        return self in (JoinType.SEMI, JoinType.ANTI)

    @property
    def one_sided_outer(self) -> bool:
        """INNER or LEFT: what stream-table and foreign-key joins accept."""
        return self in (JoinType.INNER, JoinType.LEFT)
