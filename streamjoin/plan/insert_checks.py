"""`INSERT INTO` a declared relation: where the flavour requires it (ksqlDB), the query writes
exactly the target's columns, key and value, by name."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.plan.catalog import SourceDef
from streamjoin.plan.scope import Context


def check_insert_columns(ctx: Context, target: SourceDef, key_columns, value_columns, where: exp.Expr) -> None:
    if not ctx.flavour.insert_matches_target_columns:
        return
    wrote = [c.upper() for c in (*key_columns, *value_columns)]
    has = [c.upper() for c in target.columns if not target.columns[c].proctime]
    if sorted(wrote) != sorted(has):
        raise ctx.error("insert-columns", f"INSERT INTO {target.name} writes the columns {', '.join(wrote)}, but "
                        f"{target.name} has {', '.join(has)}: select exactly its columns (rename with AS)", where)
