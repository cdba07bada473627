"""One join clause: what kind of join the inputs' kinds make it (per the flavour's join model),
the rules each flavour enforces, the co-partitioning it needs (plan.copartition), and its result
kind and key. Flink's model is in relational.py."""

from __future__ import annotations

from dataclasses import replace

from streamjoin.dialect.flavours import JoinModel
from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.copartition import (
    check_windows, copartition, key_matches, side_names, window_of, windowed_alias,
)
from streamjoin.plan.inputs import Input, JoinClause, check_key_types, finish
from streamjoin.plan.keys import KeyNaming, join_viable, synthetic_name
from streamjoin.plan.relational import plan_relational
from streamjoin.plan.scope import Context, SelectScope, col


def plan_join(ctx: Context, scope: SelectScope, left: Input, right: Input, clause: JoinClause) -> Input:
    jt = clause.join_type
    split = cond.split(clause.condition, left.aliases, right.aliases)
    written = f"{left.kind} {jt} JOIN {right.kind}"
    if ctx.flavour.on_sides_single_table and clause.condition is not None and not clause.written_without_condition:
        cond.check_single_table_sides(ctx, clause.condition, clause.ast.args.get("on") or clause.ast)
    if jt == "CROSS" and not split.pairs and not split.residual:
        return finish(ctx, left, right, n.CrossJoin, "CROSS", split, written, left_window=left.window,
                      right_window=right.window)
    if jt == "CROSS":
        jt = "INNER"  # CROSS JOIN + WHERE: for an inner join WHERE is the same as ON
    plan = {JoinModel.KEYED: _plan_keyed, JoinModel.RELATIONAL: plan_relational,
            JoinModel.WINDOWED: _plan_windowed}[ctx.flavour.join_model]
    return plan(ctx, scope, left, right, clause, split, jt, written)


def _naming(ctx, before: tuple[Input, Input], after: tuple[Input, Input], lkeys, rkeys, jt) -> KeyNaming:
    """The key naming of a keyed join: its viable columns, or a synthetic key where the flavour
    names one (see plan.keys). A windowed key's bounds name nothing."""
    bounds = set(ctx.flavour.window_columns)
    lkeys, rkeys = [k for k in lkeys if k.name not in bounds], [k for k in rkeys if k.name not in bounds]
    carried = [v for was, now in zip(before, after) if now.node is was.node for v in was.naming.viable]
    viable = join_viable(lkeys, rkeys, jt, carried)
    if viable or not ctx.flavour.synthetic_join_key:
        return KeyNaming(viable, from_join=True)
    columns = [c for side in after for e in side.entries for c in e.columns]
    return KeyNaming(synthetic=synthetic_name(columns), from_join=True)


def _plan_keyed(ctx, scope, left, right, clause, split, jt, written) -> Input:
    """ksqlDB and Lenses: the inputs' kinds pick the join; joins are on keys (re-keying streams)."""
    where = clause.ast.args.get("on") or clause.ast
    flavour = ctx.flavour
    lk, rk = left.kind, right.kind
    condition = clause.condition.sql() if clause.condition is not None else "(no condition)"
    if not split.pairs and flavour.equi_join_conditions_only:
        raise ctx.error("equi-join", f"the join with {side_names(right)} must equate an expression of each side "
                        f"(only equal comparisons between the inputs are supported); {condition} does not", where)
    if flavour.single_key_equality and len(split.pairs) > 1 and not ctx.option("allow_multi_column_keys"):
        raise ctx.error("multi-column-key", "joins on multiple conditions are not yet supported (set "
                        "'streamjoin.allow_multi_column_keys'='true' to allow multi-column keys)", where)
    if flavour.equi_join_conditions_only and split.residual and not ctx.option("allow_non_equi_predicates"):
        raise ctx.error("equi-join", "Only equality join criteria is supported (set "
                        "'streamjoin.allow_non_equi_predicates'='true' to allow residual predicates)", where)
    check_key_types(ctx, scope, split, where)
    check_windows(ctx, left, right, clause.ast)
    if window_of(left) is not None:  # windowed keys join only within the same window: equal bounds too
        bounds = [(col(windowed_alias(left), b), col(windowed_alias(right), b)) for b in flavour.window_columns]
        split = cond.SplitCondition(split.pairs + bounds, split.residual)
    if lk == "table" and rk == "stream":
        if not flavour.table_right_join_stream or jt != "RIGHT":
            allowed = " (Lenses allows only RIGHT JOIN for table-stream)" if flavour.table_right_join_stream else ""
            raise ctx.error("join-operand-order", f"invalid operands: {side_names(left)} is a table and "
                            f"{side_names(right)} a stream; a table cannot be joined with a stream on its right{allowed}",
                            clause.ast)
        # table RIGHT JOIN stream == stream LEFT JOIN table
        swapped = cond.SplitCondition([(r, l) for l, r in split.pairs], split.residual)
        return _plan_keyed(ctx, scope, right, left, clause, swapped, "LEFT", written)
    lkeys, rkeys = [p[0] for p in split.pairs], [p[1] for p in split.pairs]
    if lk == "stream" and rk == "stream":
        if clause.within is None:
            raise ctx.error("stream-stream-window", "Stream-Stream joins must have a WITHIN clause "
                            "specified (a join window is required)", clause.ast)
        before = (left, right)
        left, right = copartition(ctx, left, right, lkeys, rkeys, clause.ast)
        key_names = {e.sql() for e in lkeys + rkeys} if len(lkeys) == 1 else set()
        naming = _naming(ctx, before, (left, right), lkeys, rkeys, jt)
        window = clause.within
        if flavour.zero_grace_by_default and window.grace_ms is None:
            window = replace(window, grace_ms=0)
        eager = flavour.eager_outer_without_grace and clause.within.grace_ms is None
        return finish(ctx, left, right, n.StreamStreamJoin, jt, split, written, key=lkeys, key_names=key_names,
                      naming=naming, window=window, eager_outer=ctx.option("eager_outer", eager),
                      store_retention=ctx.option("window_store_retention", flavour.stream_join_store_retention))
    if clause.within is not None:
        raise ctx.error("window-on-table", "WITHIN applies to stream-stream joins only; this join has a table input", clause.ast)
    if lk == "stream":  # stream-table
        if jt not in ("INNER", "LEFT"):
            raise ctx.error("stream-table-join-type", f"{jt} OUTER joins between streams and tables are not "
                            "supported (stream-table joins support INNER and LEFT)", clause.ast)
        if flavour.table_joins_on_primary_key and not key_matches(right, rkeys):
            raise ctx.error("table-non-key", f"{condition}: a stream-table join must use the table's primary key; "
                            f"{', '.join(e.sql() for e in rkeys)} is not the key of {side_names(right)}", where)
        before = (left, right)
        left, right = copartition(ctx, left, right, lkeys, rkeys, clause.ast)
        key_names = {e.sql() for e in lkeys + rkeys} if len(lkeys) == 1 else set()
        reemit = jt == "LEFT" and ctx.option("reemit_on_table_update", flavour.reemit_on_late_table_row)
        return finish(ctx, left, right, n.StreamTableJoin, jt, split, written, key=lkeys, key_names=key_names,
                      naming=_naming(ctx, before, (left, right), lkeys, rkeys, jt),
                      reemit_on_late_table_row=reemit)
    # table-table
    if flavour.table_joins_on_primary_key and not key_matches(right, rkeys):
        raise ctx.error("table-table-key", f"{condition}: a table-table join must use the primary key of the "
                        f"right table {side_names(right)} (many-to-many joins are not supported)", where)
    if flavour.table_joins_on_primary_key and not key_matches(left, lkeys):
        if jt not in ("INNER", "LEFT"):
            raise ctx.error("foreign-key-join-type", f"{jt} OUTER JOIN on a foreign key is not supported "
                            "(foreign-key joins support INNER and LEFT)", clause.ast)
        if flavour.foreign_key_join_needs_source_table and not isinstance(left.node, n.Source):
            raise ctx.error("foreign-key-join-input", f"{condition}: a foreign-key join must read a declared table "
                            f"on its left, not the result of joining {side_names(left)}", where)
        owner = left.entries[0].source.name if left.entries[0].source else left.entries[0].alias
        naming = KeyNaming(left.node.key, every_part=True, owner=owner, from_join=True)
        return finish(ctx, left, right, n.ForeignKeyJoin, jt, split, written, key=left.node.key,
                      key_names=left.key_names, naming=naming,
                      tombstone_without_result=ctx.option("fk_redundant_tombstones",
                                                          flavour.foreign_key_tombstone_without_result))
    before = (left, right)
    left, right = copartition(ctx, left, right, lkeys, rkeys, clause.ast)
    key_names = {e.sql() for e in lkeys + rkeys} if len(lkeys) == 1 and jt != "FULL" else set()
    return finish(ctx, left, right, n.TableTableJoin, jt, split, written, key=lkeys, key_names=key_names,
                  naming=_naming(ctx, before, (left, right), lkeys, rkeys, jt))


def _plan_windowed(ctx, scope, left, right, clause, split, jt, written) -> Input:
    """s-Server: streams joined within their OVER windows; a stream-table join reads the table
    as it was when the query started."""
    where = clause.ast.args.get("on") or clause.ast
    if left.kind == right.kind == "stream":
        return finish(ctx, left, right, n.OverWindowJoin, jt, split, written, kind="stream",
                      left_window=left.window or n.RelationWindow("RANGE", 0),
                      right_window=right.window or n.RelationWindow("RANGE", 0))
    if left.kind == "stream" or right.kind == "stream":
        if not split.pairs:
            raise ctx.error("theta-join", "stream-table joins must be equi-joins (a join using an equality "
                            "operator), not general theta joins", where)
        if left.kind == "table":
            if jt not in ("INNER", "RIGHT"):
                raise ctx.error("stream-table-join-type", "an outer stream-table join must be one-sided: "
                                "keep the stream side", clause.ast)
            swapped = cond.SplitCondition([(r, l) for l, r in split.pairs], split.residual)
            left, right, split, jt = right, left, swapped, "LEFT" if jt == "RIGHT" else jt
        elif jt not in ("INNER", "LEFT"):
            raise ctx.error("stream-table-join-type", "an outer stream-table join must be one-sided: "
                            "keep the stream side", clause.ast)
        return finish(ctx, left, right, n.StreamTableJoin, jt, split, written, kind="stream",
                      static_snapshot=True)
    return finish(ctx, left, right, n.TableTableJoin, jt, split, written, kind="table")
