"""Plan nodes of Flink's changelog handling: an upsert input normalized into a full changelog,
and ROW_NUMBER() = 1 deduplication (the rest of the plan's nodes: nodes.py)."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from streamjoin.plan.nodes import PlanNode


@dataclass(frozen=True, eq=False)
class ChangelogNormalize(PlanNode):
    """An upsert input (a table keyed by `key`) read as a full changelog: a new row of a key
    retracts its old row (-U, +U) and a tombstone retracts the deleted row (-D), so an operator
    that needs the deleted row (a temporal join's probe side) gets it (Flink's ChangelogNormalize)."""

    child: PlanNode | None = None

    @property
    def children(self):
        return (self.child,)


@dataclass(frozen=True, eq=False)
class Deduplicate(PlanNode):
    """Per key (the PARTITION BY `key`) the first row, or the last (`keep_last`), by `order_time`
    (event time; None: arrival order): an upsert table keyed by `key` (Flink's ROW_NUMBER = 1)."""

    child: PlanNode | None = None
    keep_last: bool = False
    order_time: exp.Expr | None = None

    @property
    def children(self):
        return (self.child,)


__all__ = ["ChangelogNormalize", "Deduplicate"]
