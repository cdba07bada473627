"""One join clause: what kind of join the inputs' kinds make it (per the flavour's join model),
the rules each flavour enforces, the co-partitioning it needs (plan.copartition), and its result
kind and key. Flink's model is in relational.py."""

from __future__ import annotations

from dataclasses import replace
from typing import NamedTuple

from sqlglot import exp

from streamjoin.kinds import JoinType, Kind
from streamjoin.dialect.flavours import JoinModel
from streamjoin.plan import conditions as cond
from streamjoin.plan import nodes as n
from streamjoin.plan.copartition import (
    check_key_formats, check_windows, copartition, key_matches, side_names, window_of, windowed_alias,
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
    if jt == JoinType.CROSS and not split.pairs and not split.residual:
        return finish(ctx, left, right, n.CrossJoin, JoinType.CROSS, split, written, left_window=left.window,
                      right_window=right.window)
    if jt == JoinType.CROSS:
        jt = JoinType.INNER  # CROSS JOIN + WHERE: for an inner join WHERE is the same as ON
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


class _KeyedJoin(NamedTuple):
    """One keyed join being planned: its inputs, its clause, its condition split into key pairs
    and residual, its join type and how it reads (`stream LEFT JOIN table`)."""

    left: Input
    right: Input
    clause: JoinClause
    split: cond.SplitCondition
    jt: JoinType
    written: str

    @property
    def where(self) -> exp.Expr:
        return self.clause.ast.args.get("on") or self.clause.ast

    @property
    def condition(self) -> str:
        return self.clause.condition.sql() if self.clause.condition is not None else "(no condition)"

    @property
    def left_keys(self) -> list:
        return [p[0] for p in self.split.pairs]

    @property
    def right_keys(self) -> list:
        return [p[1] for p in self.split.pairs]


class _Copartitioned(NamedTuple):
    """A keyed join's inputs re-keyed to its key, the names known to equal the key, its key naming."""

    left: Input
    right: Input
    key_names: set[str]
    naming: KeyNaming


def _plan_keyed(ctx, scope, left, right, clause, split, jt, written) -> Input:
    """ksqlDB and Lenses: the inputs' kinds pick the join; joins are on keys (re-keying streams)."""
    join = _KeyedJoin(left, right, clause, split, jt, written)
    _check_keyed_condition(ctx, join)
    check_key_types(ctx, scope, split, join.where)
    check_windows(ctx, left, right, clause.ast)
    check_key_formats(ctx, left, right, clause.ast)
    if window_of(left) is not None:  # windowed keys join only within the same window: equal bounds too
        bounds = [(col(windowed_alias(left), b), col(windowed_alias(right), b)) for b in ctx.flavour.window_columns]
        join = join._replace(split=cond.SplitCondition(split.pairs + bounds, split.residual))
    kinds = (left.kind, right.kind)
    if kinds == (Kind.TABLE, Kind.STREAM):
        _check_table_stream(ctx, join)
        # table RIGHT JOIN stream == stream LEFT JOIN table
        swapped = cond.SplitCondition([(r, l) for l, r in join.split.pairs], join.split.residual)
        return _plan_keyed(ctx, scope, right, left, clause, swapped, JoinType.LEFT, written)
    if kinds != _STREAM_STREAM and clause.within is not None:
        raise ctx.error("window-on-table", "WITHIN applies to stream-stream joins only; this join has a table input",
                        clause.ast)
    return _KEYED_PLANNERS[kinds](ctx, join)


def _check_keyed_condition(ctx, join: _KeyedJoin) -> None:
    """The flavour's rules on a keyed join's condition: equalities only, how many of them."""
    flavour, split, where = ctx.flavour, join.split, join.where
    if not split.pairs and flavour.equi_join_conditions_only:
        raise ctx.error("equi-join", f"the join with {side_names(join.right)} must equate an expression of each side "
                        f"(only equal comparisons between the inputs are supported); {join.condition} does not", where)
    if flavour.single_key_equality and len(split.pairs) > 1 and not ctx.option("allow_multi_column_keys"):
        raise ctx.error("multi-column-key", "joins on multiple conditions are not yet supported (set "
                        "'streamjoin.allow_multi_column_keys'='true' to allow multi-column keys)", where)
    if flavour.equi_join_conditions_only and split.residual and not ctx.option("allow_non_equi_predicates"):
        raise ctx.error("equi-join", "Only equality join criteria is supported (set "
                        "'streamjoin.allow_non_equi_predicates'='true' to allow residual predicates)", where)


def _check_table_stream(ctx, join: _KeyedJoin) -> None:
    """A table with a stream on its right: only Lenses' RIGHT JOIN, which is planned swapped."""
    flavour = ctx.flavour
    if not flavour.table_right_join_stream or join.jt != JoinType.RIGHT:
        allowed = " (Lenses allows only RIGHT JOIN for table-stream)" if flavour.table_right_join_stream else ""
        raise ctx.error("join-operand-order", f"invalid operands: {side_names(join.left)} is a table and "
                        f"{side_names(join.right)} a stream; a table cannot be joined with a stream on its right"
                        f"{allowed}", join.clause.ast)


def _copartitioned(ctx, join: _KeyedJoin, names_key: bool = True) -> _Copartitioned:
    """The inputs re-keyed to the join key (plan.copartition); a one-column key's expressions
    name it where `names_key`."""
    lkeys, rkeys = join.left_keys, join.right_keys
    left, right = copartition(ctx, join.left, join.right, lkeys, rkeys, join.clause.ast)
    key_names = {e.sql() for e in lkeys + rkeys} if len(lkeys) == 1 and names_key else set()
    naming = _naming(ctx, (join.left, join.right), (left, right), lkeys, rkeys, join.jt)
    return _Copartitioned(left, right, key_names, naming)


def _stream_stream(ctx, join: _KeyedJoin) -> Input:
    flavour, window = ctx.flavour, join.clause.within
    if window is None:
        raise ctx.error("stream-stream-window", "Stream-Stream joins must have a WITHIN clause "
                        "specified (a join window is required)", join.clause.ast)
    keyed = _copartitioned(ctx, join)
    eager = flavour.eager_outer_without_grace and window.grace_ms is None
    if flavour.zero_grace_by_default and window.grace_ms is None:
        window = replace(window, grace_ms=0)
    return finish(ctx, keyed.left, keyed.right, n.StreamStreamJoin, join.jt, join.split, join.written,
                  key=join.left_keys, key_names=keyed.key_names, naming=keyed.naming, window=window,
                  eager_outer=ctx.option("eager_outer", eager),
                  store_retention=ctx.option("window_store_retention", flavour.stream_join_store_retention))


def _stream_table(ctx, join: _KeyedJoin) -> Input:
    flavour, jt = ctx.flavour, join.jt
    if not jt.one_sided_outer:
        raise ctx.error("stream-table-join-type", f"{jt} OUTER join of stream {side_names(join.left)} and table "
                        f"{side_names(join.right)} ({join.condition}) is not supported: a stream-table join is INNER or "
                        "LEFT, the stream on the left", join.clause.ast)
    if flavour.table_joins_on_primary_key and not key_matches(join.right, join.right_keys):
        raise ctx.error("table-non-key", f"{join.condition}: a stream-table join must use the table's primary key; "
                        f"{', '.join(e.sql() for e in join.right_keys)} is not the key of {side_names(join.right)}",
                        join.where)
    keyed = _copartitioned(ctx, join)
    reemit = jt == JoinType.LEFT and ctx.option("reemit_on_table_update", flavour.reemit_on_late_table_row)
    return finish(ctx, keyed.left, keyed.right, n.StreamTableJoin, jt, join.split, join.written,
                  key=join.left_keys, key_names=keyed.key_names, naming=keyed.naming,
                  reemit_on_late_table_row=reemit)


def _table_table(ctx, join: _KeyedJoin) -> Input:
    flavour, left, right = ctx.flavour, join.left, join.right
    if flavour.table_joins_on_primary_key and not key_matches(right, join.right_keys):
        raise ctx.error("table-table-key", f"{join.condition}: a table-table join must use the primary key of the "
                        f"right table {side_names(right)} (many-to-many joins are not supported)", join.where)
    if flavour.table_joins_on_primary_key and not key_matches(left, join.left_keys):
        return _foreign_key(ctx, join)
    keyed = _copartitioned(ctx, join, names_key=join.jt != JoinType.FULL)
    return finish(ctx, keyed.left, keyed.right, n.TableTableJoin, join.jt, join.split, join.written,
                  key=join.left_keys, key_names=keyed.key_names, naming=keyed.naming)


def _foreign_key(ctx, join: _KeyedJoin) -> Input:
    """A table-table join on the right table's key and not the left's: a foreign-key join."""
    flavour, left = ctx.flavour, join.left
    if not join.jt.one_sided_outer:
        raise ctx.error("foreign-key-join-type", f"{join.jt} OUTER join of table {side_names(left)} on the foreign "
                        f"key {', '.join(e.sql() for e in join.left_keys)} to table {side_names(join.right)} "
                        f"({join.condition}) is not supported: a foreign-key join is INNER or LEFT", join.clause.ast)
    if flavour.foreign_key_join_needs_source_table and not isinstance(left.node, n.Source):
        raise ctx.error("foreign-key-join-input", f"{join.condition}: a foreign-key join must read a declared table "
                        f"on its left, not the result of joining {side_names(left)}", join.where)
    owner = left.entries[0].source.name if left.entries[0].source else left.entries[0].alias
    naming = KeyNaming(left.node.key, every_part=True, owner=owner, from_join=True)
    return finish(ctx, left, join.right, n.ForeignKeyJoin, join.jt, join.split, join.written, key=left.node.key,
                  key_names=left.key_names, naming=naming,
                  tombstone_without_result=ctx.option("fk_redundant_tombstones",
                                                      flavour.foreign_key_tombstone_without_result))


_STREAM_STREAM = (Kind.STREAM, Kind.STREAM)
# The keyed join each pair of input kinds makes (table-stream is planned as stream-table).
_KEYED_PLANNERS = {_STREAM_STREAM: _stream_stream, (Kind.STREAM, Kind.TABLE): _stream_table,
                   (Kind.TABLE, Kind.TABLE): _table_table}


def _plan_windowed(ctx, scope, left, right, clause, split, jt, written) -> Input:
    """s-Server: streams joined within their OVER windows; a stream-table join reads the table
    as it was when the query started."""
    where = clause.ast.args.get("on") or clause.ast
    if left.kind == right.kind == Kind.STREAM:
        return finish(ctx, left, right, n.OverWindowJoin, jt, split, written, kind=Kind.STREAM,
                      left_window=left.window or n.RelationWindow("RANGE", 0),
                      right_window=right.window or n.RelationWindow("RANGE", 0))
    if left.kind == Kind.STREAM or right.kind == Kind.STREAM:
        if not split.pairs:
            raise ctx.error("theta-join", "stream-table joins must be equi-joins (a join using an equality "
                            "operator), not general theta joins", where)
        if left.kind == Kind.TABLE:
            if jt not in (JoinType.INNER, JoinType.RIGHT):
                raise ctx.error("stream-table-join-type", "an outer stream-table join must be one-sided: "
                                "keep the stream side", clause.ast)
            swapped = cond.SplitCondition([(r, l) for l, r in split.pairs], split.residual)
            left, right, split, jt = right, left, swapped, JoinType.LEFT if jt == JoinType.RIGHT else jt
        elif not jt.one_sided_outer:
            raise ctx.error("stream-table-join-type", "an outer stream-table join must be one-sided: "
                            "keep the stream side", clause.ast)
        return finish(ctx, left, right, n.StreamTableJoin, jt, split, written, kind=Kind.STREAM,
                      static_snapshot=True)
    return finish(ctx, left, right, n.TableTableJoin, jt, split, written, kind=Kind.TABLE)
