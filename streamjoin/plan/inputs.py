"""The pieces every join planner shares: a join input under construction (`Input`), a parsed
join clause (`JoinClause`), key type checks and the join node with its result. Re-keying is in
plan.copartition."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from streamjoin.kinds import JoinType, Kind
from streamjoin.plan import nodes as n
from streamjoin.plan.keys import KeyNaming
from streamjoin.plan.scope import Context, SelectScope, ScopeEntry


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
    def kind(self) -> Kind:
        return Kind.STREAM if self.node.kind == Kind.STREAM else Kind.TABLE


@dataclass
class JoinClause:
    """A parsed `JOIN right ...` clause before planning."""

    join_type: JoinType
    ast: exp.Join
    condition: exp.Expr | None  # resolved ON/USING/NATURAL/WHERE-derived condition
    within: n.JoinWindow | None = None
    temporal: exp.Expr | None = None  # resolved FOR SYSTEM_TIME AS OF / temporal function arg
    written_without_condition: bool = False
    state_ttl: dict[str, int] = field(default_factory=dict)  # STATE_TTL hints: alias (lower) -> ms

    def __post_init__(self) -> None:
        self.join_type = JoinType(self.join_type)


def finish(ctx, left, right, cls, jt, split, written, key=(), kind=None, key_names=(), naming=None,
           **extra) -> Input:
    kind = kind or (Kind.STREAM if left.kind == right.kind == Kind.STREAM or cls in (n.StreamTableJoin, n.TemporalJoin)
                    else Kind.TABLE)
    node = cls(kind, tuple(key), jt, left.node, right.node, tuple(p[0] for p in split.pairs),
               tuple(p[1] for p in split.pairs), split.residual_predicate, written=written, **extra)
    names = set(key_names) | ({k.sql() for k in key} if len(key) == 1 else set())
    entries = left.entries if jt in n.FILTERING_JOINS else left.entries + right.entries  # SEMI/ANTI: left rows
    return Input(node, entries, names, left.partitions or right.partitions, None, node,
                 naming or KeyNaming.of_key(key, from_join=True))


def check_key_types(ctx: Context, scope: SelectScope, split, where) -> None:
    for lhs, rhs in split.pairs:
        lt, rt = scope.type_of(lhs), scope.type_of(rhs)
        if lt and rt and not lt.joinable_with(rt):
            raise ctx.error("key-type", f"Invalid join condition: types don't match. Got "
                            f"{lhs.sql()}{{{lt.family}}} = {rhs.sql()}{{{rt.family}}}; CAST one side", where)
