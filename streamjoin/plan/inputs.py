"""A join input under construction, and a JOIN clause before planning."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from streamjoin.plan import nodes as n
from streamjoin.plan.keys import KeyNaming
from streamjoin.plan.scope import ScopeEntry


@dataclass
class Input:
    """A join input under construction: its plan, the relations it provides, the names (sql of
    qualified expressions) known to equal its key, and its partition count."""

    node: n.PlanNode
    entries: list[ScopeEntry]
    key_names: set[str] = field(default_factory=set)
    partitions: int | None = None
    window: n.RelationWindow | None = None
    last_join: n.Join | None = None
    naming: KeyNaming = KeyNaming()  # which projected column may provide the key (see plan.keys)

    @property
    def aliases(self) -> set[str]:
        return {e.alias for e in self.entries}

    @property
    def kind(self) -> str:
        return "stream" if self.node.kind == "stream" else "table"


@dataclass
class JoinClause:
    """A parsed `JOIN right ...` clause before planning."""

    join_type: str
    ast: exp.Join
    condition: exp.Expr | None  # resolved ON/USING/NATURAL/WHERE-derived condition
    within: n.JoinWindow | None = None
    temporal: exp.Expr | None = None  # resolved FOR SYSTEM_TIME AS OF / temporal function arg
    written_without_condition: bool = False
