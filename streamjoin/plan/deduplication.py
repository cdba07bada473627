"""Flink's deduplication: a subquery numbering rows with `ROW_NUMBER() OVER (PARTITION BY keys
ORDER BY time [ASC|DESC]) AS rn` that its enclosing query filters to `rn = 1` keeps, per key, the
first (ASC) or the last (DESC) row by that time attribute, as an upsert table keyed by `keys`
(versioned, when ordered by event time):

    SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY currency ORDER BY ts DESC) AS rn
                   FROM rates) WHERE rn = 1
"""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from streamjoin.plan import conditions as cond
from streamjoin.plan.changelog_nodes import Deduplicate
from streamjoin.plan.inputs import Input
from streamjoin.plan.scope import Context, SelectScope


def row_number(select: exp.Select) -> exp.Alias | None:
    """The projected `ROW_NUMBER() OVER (...) AS name` of a SELECT, if any."""
    return next((e for e in select.expressions if isinstance(e, exp.Alias) and isinstance(e.this, exp.Window)
                 and isinstance(e.this.this, exp.RowNumber)), None)


def first_rank_columns(select: exp.Select) -> frozenset[str]:
    """Columns (lower case) that WHERE keeps at 1: `rn = 1`, `rn <= 1` or `rn < 2`."""
    names = set()
    for conjunct in cond.conjuncts(select.args["where"].this) if select.args.get("where") else []:
        if isinstance(conjunct, (exp.EQ, exp.LTE, exp.LT)) and isinstance(conjunct.this, exp.Column) \
                and isinstance(conjunct.expression, exp.Literal):
            limit = 2 if isinstance(conjunct, exp.LT) else 1
            if conjunct.expression.name == str(limit):
                names.add(conjunct.this.name.lower())
    return frozenset(names)


def deduplicate(ctx: Context, scope: SelectScope, current: Input, number: exp.Alias, ranked: frozenset[str]) -> Input:
    """`current` deduplicated as the ROW_NUMBER `number` orders it (the enclosing query keeps rank 1)."""
    window = number.this
    if number.alias.lower() not in ranked:
        raise ctx.error("row-number", f"ROW_NUMBER() is supported for deduplication only: the enclosing query "
                        f"must keep {number.alias} = 1", number)
    order = window.args.get("order")
    partition = [scope.resolve(p) for p in window.args.get("partition_by") or []]
    if order is None or len(order.expressions) != 1 or not partition:
        raise ctx.error("row-number", "deduplication needs PARTITION BY keys and ORDER BY one time attribute", number)
    ordered = order.expressions[0]
    time = scope.resolve(ordered.this)
    entry = scope.find(time.table) if isinstance(time, exp.Column) else None
    attribute = entry and next((a for a in (entry.timestamp, entry.proctime) if a and a.lower() == time.name.lower()), None)
    if attribute is None:
        raise ctx.error("row-number", f"deduplication orders by a time attribute; {ordered.this.sql()} is not one",
                        ordered)
    event_time = attribute == entry.timestamp
    node = Deduplicate("table", tuple(partition), current.node, keep_last=bool(ordered.args.get("desc")),
                         order_time=time if event_time else None)
    return replace(current, node=node, key_names={partition[0].sql()} if len(partition) == 1 else set())
