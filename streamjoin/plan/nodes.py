"""Logical plan nodes. Frozen; every expression inside is a sqlglot expression whose column
references are qualified with the alias of the relation that provides them (`l.id`, never `id`).

Every node knows its result `kind` ('stream' or 'table') and `key` (the qualified expressions the
result is partitioned and keyed by; empty when unkeyed). A query is a tree ending in a `Sink`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from sqlglot import exp

from streamjoin.plan.catalog import SourceDef, SourceWindow
from streamjoin.dialect.types import SqlType
from streamjoin.kinds import JoinType, Kind


@dataclass(frozen=True, eq=False)
class PlanNode:
    kind: Kind
    key: tuple[exp.Expr, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Kind(self.kind))  # a closed set, whatever a planner passes

    @property
    def children(self) -> tuple["PlanNode", ...]:
        return ()

    @property
    def label(self) -> str:
        return type(self).__name__


@dataclass(frozen=True)
class RelationWindow:
    """s-Server `OVER (...)` on one join input. RANGE: rows whose rowtime is within
    [now - preceding_ms, now - following_ms]; ROWS: the last `preceding` rows up to the current
    one. No OVER clause = RANGE CURRENT ROW (preceding 0)."""

    unit: str  # 'RANGE' (milliseconds) or 'ROWS' (row counts)
    preceding: int
    following: int = 0


@dataclass(frozen=True, eq=False)
class Source(PlanNode):
    """Reads one catalog relation under an alias (kind 'versioned_table' reads as a table)."""

    alias: str = ""
    source: SourceDef | None = None
    window: RelationWindow | None = None
    columns: Mapping[str, SqlType | None] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"Source {self.source.name} AS {self.alias}"


@dataclass(frozen=True, eq=False)
class Repartition(PlanNode):
    """Re-keys a stream (or, in Lenses, any input) by `key` through a repartition topic with
    `partitions` partitions, so both join inputs are co-partitioned (Kafka's default partitioner)."""

    child: PlanNode | None = None
    partitions: int | None = None
    reason: str = ""

    @property
    def children(self):
        return (self.child,)


@dataclass(frozen=True)
class JoinWindow:
    """ksqlDB/Lenses `WITHIN`: a right record at time tr joins a left record at tl when
    tl - before_ms <= tr <= tl + after_ms. grace_ms None = no GRACE PERIOD given."""

    before_ms: int
    after_ms: int
    grace_ms: int | None = None


@dataclass(frozen=True)
class IntervalBounds:
    """Flink interval join: left_time - right_time within [lower_ms, upper_ms] (inclusive)."""

    left_time: exp.Expr
    right_time: exp.Expr
    lower_ms: int
    upper_ms: int


FILTERING_JOINS = (JoinType.SEMI, JoinType.ANTI)


@dataclass(frozen=True, eq=False)
class Join(PlanNode):
    """Common shape of every join. join_type: INNER, LEFT, RIGHT, FULL, CROSS, or SEMI / ANTI
    (a subquery test: the result is the left rows that do / do not match). left_keys[i]
    equals right_keys[i] (qualified expressions; empty for CROSS and key-less joins); residual:
    the rest of the condition (or None), evaluated per candidate pair. The subclasses' own fields
    carry the flavour-chosen semantics their operator needs."""

    join_type: JoinType = JoinType.INNER
    left: PlanNode | None = None
    right: PlanNode | None = None
    left_keys: tuple[exp.Expr, ...] = ()
    right_keys: tuple[exp.Expr, ...] = ()
    residual: exp.Expr | None = None
    written: str = ""  # how the join was written, for EXPLAIN (e.g. "table RIGHT JOIN stream")

    def __post_init__(self) -> None:
        super().__post_init__()
        object.__setattr__(self, "join_type", JoinType(self.join_type))

    @property
    def children(self):
        return (self.left, self.right)


@dataclass(frozen=True, eq=False)
class StreamStreamJoin(Join):
    """Windowed join of two streams (ksqlDB/Lenses WITHIN [GRACE PERIOD]). eager_outer: an
    unmatched outer row is emitted at once, not when its window closes (ksqlDB without GRACE).
    store_retention: late records as Kafka Streams treats them (each side's window store keeps
    records by its own stream time; nothing is dropped), not as ksqlDB's documentation says."""

    window: JoinWindow | None = None
    eager_outer: bool = False
    store_retention: bool = False


@dataclass(frozen=True, eq=False)
class StreamTableJoin(Join):
    """Lookup of each left stream record in the right table's current state. A table RIGHT JOIN
    stream is planned as stream LEFT JOIN table with the inputs swapped. Right table updates emit
    nothing, unless reemit_on_late_table_row (Lenses LEFT): an unmatched stream row is emitted
    again, joined, when a table row for its key arrives later. static_snapshot (s-Server): the table is read as it
    was when the query started."""

    reemit_on_late_table_row: bool = False
    static_snapshot: bool = False


@dataclass(frozen=True, eq=False)
class TableTableJoin(Join):
    """Primary-key join of two tables; a change on either side updates the result row."""


@dataclass(frozen=True, eq=False)
class ForeignKeyJoin(Join):
    """Left table's column(s) (left_keys) = right table's primary key; result keyed by the left key.
    tombstone_without_result: a deleted (or no longer matching) left row forwards a tombstone
    even when no result row existed (Kafka Streams)."""

    tombstone_without_result: bool = False


@dataclass(frozen=True, eq=False)
class RegularJoin(Join):
    """Flink regular join: both inputs kept in state, either side triggers output. state_ttl_ms
    (or a (left, right) pair, from STATE_TTL hints):
    how long (in stream time) a row is kept (Flink's table.exec.state.ttl; None: forever)."""

    state_ttl_ms: int | tuple[int | None, int | None] | None = None
    # An input read as upserts by its join key (a table keyed by exactly that); any other input
    # is a changelog whose retractions (-U, -D) carry the rows they withdraw.
    left_upsert: bool = False
    right_upsert: bool = False


@dataclass(frozen=True, eq=False)
class TemporalJoin(Join):
    """Flink temporal join: each left (probe) row joins the right version valid at `time_attribute`
    (event time: versioned table or temporal table function; processing time: latest row)."""

    time_attribute: exp.Expr | None = None
    processing_time: bool = False


@dataclass(frozen=True, eq=False)
class AsofJoin(Join):
    """`ASOF JOIN ... MATCH_CONDITION (left_time <comparison> right_time)` of two streams: each
    left row joins the one right row of its key closest in event time on the side `comparison`
    (>=, >, <=, <) names. left_time / right_time are the inputs' event-time columns."""

    left_time: exp.Expr | None = None
    right_time: exp.Expr | None = None
    comparison: str = ">="


@dataclass(frozen=True, eq=False)
class IntervalJoin(Join):
    """Flink interval join of two append-only streams with time bounds."""

    bounds: IntervalBounds | None = None


@dataclass(frozen=True, eq=False)
class OverWindowJoin(Join):
    """s-Server join of two streams each limited by its OVER window (RANGE time or ROWS count);
    output rowtime = the later input rowtime; output clock = min of the two input clocks."""

    left_window: RelationWindow | None = None
    right_window: RelationWindow | None = None


@dataclass(frozen=True, eq=False)
class CrossJoin(Join):
    """Every left row with every right row (s-Server: within both OVER windows)."""

    left_window: RelationWindow | None = None
    right_window: RelationWindow | None = None


@dataclass(frozen=True, eq=False)
class Lateral(PlanNode):
    """Lenses `LATERAL expr AS alias` / explode: one output row per element of `expression`."""

    child: PlanNode | None = None
    expression: exp.Expr | None = None
    alias: str = ""

    @property
    def children(self):
        return (self.child,)


@dataclass(frozen=True, eq=False)
class Filter(PlanNode):
    child: PlanNode | None = None
    predicate: exp.Expr | None = None

    @property
    def children(self):
        return (self.child,)


@dataclass(frozen=True)
class GroupWindow:
    """ksqlDB `WINDOW TUMBLING|HOPPING (SIZE ..., [ADVANCE BY ...], [GRACE PERIOD ...])` of a GROUP
    BY: a row counts in every window [start, start + size) that holds its ts, starts being
    multiples of advance (= size when tumbling). A window takes rows until stream time reaches
    its end + grace. emit_final (EMIT FINAL): a window's rows come out once, when it closes.
    `WINDOW SESSION (gap, [GRACE PERIOD ...])`: size_ms is the inactivity gap (advance_ms too);
    sessions are the rows' own spans (streamjoin.runtime.sessions)."""

    kind: str
    size_ms: int
    advance_ms: int
    grace_ms: int
    emit_final: bool = False


@dataclass(frozen=True, eq=False)
class Aggregate(PlanNode):
    """GROUP BY `group_by` (empty: one global group) computing `aggregates` (name -> expr);
    an updating (table) result. having: the HAVING predicate a group's row must pass. window:
    a windowed aggregation, whose key ends with the window's bounds."""

    child: PlanNode | None = None
    group_by: tuple[exp.Expr, ...] = ()
    aggregates: Mapping[str, exp.Expr] = field(default_factory=dict)
    having: exp.Expr | None = None
    window: GroupWindow | None = None

    @property
    def children(self):
        return (self.child,)


@dataclass(frozen=True, eq=False)
class Project(PlanNode):
    """Output columns: key_columns (name -> expr; ksqlDB moves the key-providing projected column
    here, other flavours keep every projected column in value_columns too) and value_columns
    (name -> expr, in order). rowtime: the expression providing the output record timestamp when
    the query projects s-Server ROWTIME (not a value column)."""

    child: PlanNode | None = None
    key_columns: Mapping[str, exp.Expr] = field(default_factory=dict)
    value_columns: Mapping[str, exp.Expr] = field(default_factory=dict)
    alias: str = ""  # a view's projection read by a later query: the alias it is read under
    # The output key is the key columns' values (Flink's upsert key), not the key the result's
    # changes carry (the join, group or partition key).
    key_from_columns: bool = False

    @property
    def children(self):
        return (self.child,)


@dataclass(frozen=True, eq=False)
class Sink(PlanNode):
    """Where the result goes: relation `name` on `topic`, kind stream (append) or table (upsert)."""

    child: PlanNode | None = None
    name: str = ""
    topic: str = ""
    partitions: int | None = None
    key_format: str = "KAFKA"
    value_format: str = "JSON"
    declared_kind: str | None = None
    wrap_single_value: bool = True  # False: a single value column is written as the bare value
    timestamp: str | None = None  # the value column whose value is the output record's timestamp
    window: SourceWindow | None = None  # a windowed result: the key ends with the window's bounds
    wrap_single_key: bool = False  # a one-column JSON key is written as an object (Flink's 'key.format')
    bootstrap: str | None = None  # Flink: the Kafka cluster the target table's options name, and its
    client_properties: tuple[tuple[str, str], ...] = field(default=(), repr=False)  # client properties
    # Lenses STORE KEY|VALUE AS a primitive: the SQL type that side's one column must have
    stored_types: tuple[str | None, str | None] = (None, None)

    @property
    def children(self):
        return (self.child,)


__all__ = [
    "FILTERING_JOINS", "Aggregate", "AsofJoin", "CrossJoin", "GroupWindow", "Filter",
    "ForeignKeyJoin", "IntervalBounds", "IntervalJoin", "Join",
    "JoinWindow", "Lateral", "OverWindowJoin", "PlanNode", "Project", "RegularJoin", "RelationWindow",
    "Repartition", "Sink", "Source", "StreamStreamJoin", "StreamTableJoin", "TableTableJoin", "TemporalJoin",
]
