"""Flink's lookup join: `JOIN t FOR SYSTEM_TIME AS OF o.proc_time AS c ON c.id = o.customer_id`
where t is a database table (`'connector' = 'jdbc'`, plan.jdbc_options). Each left row is joined
with the rows the table holds for its key when its task processes it (processing time), looked
up through the task's cache; INNER drops a row the table does not hold, LEFT pads it with NULLs.

Also the rule that keeps a database table where a lookup can read it (`check_lookup_tables`)."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.kinds import JoinType
from streamjoin.plan import nodes as n
from streamjoin.plan.inputs import Input, finish
from streamjoin.plan.lookup_nodes import LookupJoin, LookupTable
from streamjoin.plan.rewrites import walk
from streamjoin.plan.scope import Context


def is_lookup(side: Input) -> bool:
    return isinstance(side.node, LookupTable)


def plan_lookup_join(ctx: Context, left: Input, right: Input, clause, split, jt: JoinType, written: str,
                     processing: bool) -> Input:
    """The lookup join of `left` against the database table `right` (one relation)."""
    table = right.node
    where = clause.ast.args.get("on") or clause.ast
    if not processing:
        raise ctx.error("lookup-join", f"{table.alias} is a JDBC table, looked up as it is when each row is "
                        "processed: join it FOR SYSTEM_TIME AS OF the left input's PROCTIME() attribute",
                        clause.ast.this.args.get("version") or clause.ast)
    if jt not in (JoinType.INNER, JoinType.LEFT):
        raise ctx.error("lookup-join", f"a lookup join is INNER or LEFT, not {jt}", clause.ast)
    if not split.pairs:
        raise ctx.error("lookup-join", f"a lookup join needs an equality between a column of {table.alias} and "
                        f"the left input, e.g. ON {table.alias}.id = o.{table.alias}_id", where)
    for _, column in split.pairs:
        if not (isinstance(column, exp.Column) and column.table == table.alias):
            raise ctx.error("lookup-join", f"a lookup key is a column of {table.alias} as declared, not "
                            f"{column.sql()}", column)
    return finish(ctx, left, right, LookupJoin, jt, split, written, kind=left.kind, time_attribute=clause.temporal)


def check_lookup_tables(ctx: Context, node: n.PlanNode, statement: exp.Expr) -> None:
    """A database table is read by lookup joins only: anywhere else, a positioned error."""
    for parent in walk(node):
        for index, child in enumerate(parent.children):
            if isinstance(child, LookupTable) and not (isinstance(parent, LookupJoin) and index == 1):
                raise ctx.error("lookup-join", f"{child.alias} is a JDBC table, read by lookup joins only: join it "
                                "FOR SYSTEM_TIME AS OF a PROCTIME() attribute of the other input", statement)
    if isinstance(node, LookupTable):
        raise ctx.error("lookup-join", f"{node.alias} is a JDBC table, read by lookup joins only: join it "
                        "FOR SYSTEM_TIME AS OF a PROCTIME() attribute of a stream", statement)
