"""Plan nodes of Flink's lookup join against a database table (`'connector' = 'jdbc'`); the rest
of the plan's nodes: nodes.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from sqlglot import exp

from streamjoin.dialect.types import SqlType
from streamjoin.plan.catalog import SourceDef
from streamjoin.plan.nodes import Join, PlanNode

__all__ = ["LookupJoin", "LookupTable"]


@dataclass(frozen=True, eq=False)
class LookupTable(PlanNode):
    """A table kept in a database (`source.lookup`), read one key at a time by the lookup join
    above it: no topic, no state."""

    alias: str = ""
    source: SourceDef | None = None
    columns: Mapping[str, SqlType | None] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"LookupTable {self.source.name} AS {self.alias}"


@dataclass(frozen=True, eq=False)
class LookupJoin(Join):
    """Flink's processing-time lookup join (`JOIN t FOR SYSTEM_TIME AS OF o.proctime`, t a JDBC
    table): each left row, when its task processes it, looks its key (`right_keys`: columns of
    the table) up in the database through the task's cache; later changes of the table do not
    touch past results. `right` is a `LookupTable`."""

    time_attribute: exp.Expr | None = None
