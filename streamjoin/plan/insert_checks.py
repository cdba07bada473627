"""`INSERT INTO` a declared relation: a Kafka topic, not a database table (`check_insert_target`);
where the flavour requires it (ksqlDB), the query writes exactly the target's columns, key and
value, by name (`check_insert_columns`)."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.plan.catalog import SourceDef
from streamjoin.plan.scope import Context


def check_insert_target(ctx: Context, name: str, lookup, where: exp.Expr) -> None:
    """A query writes a Kafka table: not `name` when it is a JDBC one (`lookup`: its table)."""
    if lookup is not None:
        raise ctx.error("lookup-join", f"{name} is a JDBC table, read by lookup joins only: a query writes a "
                        "Kafka table ('connector' = 'kafka' or 'upsert-kafka'); load the database from its topic "
                        "(e.g. a Kafka Connect JDBC sink)", where)


def check_insert_columns(ctx: Context, target: SourceDef, key_columns, value_columns, where: exp.Expr) -> None:
    if not ctx.flavour.insert_matches_target_columns:
        return
    wrote = [c.upper() for c in (*key_columns, *value_columns)]
    has = [c.upper() for c in target.columns if not target.columns[c].proctime]
    if sorted(wrote) != sorted(has):
        raise ctx.error("insert-columns", f"INSERT INTO {target.name} writes the columns {', '.join(wrote)}, but "
                        f"{target.name} has {', '.join(has)}: select exactly its columns (rename with AS)", where)
