"""Which projected column becomes the result key (the flavours whose `output_key` is
PROJECTED_COLUMN, i.e. ksqlDB), and the rules a projection must follow for it.

A result carries a `KeyNaming`: the expressions a projected column may equal to provide the key,
in order of preference. A join's are its column references that equal the join key (ksqlDB's
"viable" key columns: both sides of the equality, and those of an input the join did not
re-key); a FULL OUTER join or a join on expressions only has none, its key is a synthetic column
(`ROWKEY`) the projection names instead. A foreign-key join is keyed by the left table's primary
key, every column of which must be projected.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from sqlglot import exp

from streamjoin.kinds import JoinType

SYNTHETIC_KEY = "ROWKEY"


@dataclass(frozen=True)
class KeyNaming:
    """viable: expressions equal to the (single-column) key, preferred first; synthetic: the name
    of a key no input column provides; every_part: each key expression must be projected (a
    foreign-key join's left primary key, `owner` its table); from_join: the key is a join's."""

    viable: tuple[exp.Expr, ...] = ()
    synthetic: str | None = None
    every_part: bool = False
    owner: str = ""
    from_join: bool = False

    @classmethod
    def of_key(cls, key: Iterable[exp.Expr], from_join: bool = False) -> "KeyNaming":
        key = tuple(key)
        return cls(key if len(key) == 1 else (), from_join=from_join)


def join_viable(lkeys, rkeys, join_type: str, carried: Iterable[exp.Expr]) -> tuple[exp.Expr, ...]:
    """The column references equal to a join's key: none for FULL OUTER (either side may be
    missing) or several key columns; else the left then the right join expression when each is a
    column, then those carried from an input keyed by its join expression already."""
    if join_type == JoinType.FULL or len(lkeys) != 1:
        return ()
    out: list[exp.Expr] = []
    for candidate in (lkeys[0], rkeys[0], *carried):
        if isinstance(candidate, exp.Column) and all(c.sql() != candidate.sql() for c in out):
            out.append(candidate)
    return tuple(out)


def synthetic_name(columns: Iterable[str]) -> str:
    """ROWKEY, or ROWKEY_<n+1> when an input already has ROWKEY or ROWKEY_<n> columns (n the
    largest), so the synthetic key never shadows a column."""
    taken = [name.upper() for name in columns]
    suffixes = [int(m.group(1) or 0) for m in (re.fullmatch(rf"{SYNTHETIC_KEY}(?:_(\d+))?", t) for t in taken) if m]
    return f"{SYNTHETIC_KEY}_{max(suffixes) + 1}" if suffixes else SYNTHETIC_KEY


def is_synthetic_reference(expression: exp.Expr, naming: KeyNaming) -> bool:
    """Is `expression` the bare synthetic key column (how the resolver leaves it: unqualified)?"""
    return (naming.synthetic is not None and isinstance(expression, exp.Column) and not expression.table
            and expression.name.upper() == naming.synthetic)
