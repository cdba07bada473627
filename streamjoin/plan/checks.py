"""Checks of a whole statement before it is planned: clauses a streaming query cannot honour
(which planning would otherwise silently drop), EMIT FINAL without a windowed aggregation,
subqueries where the flavour reads none, every duration and INTERVAL read once, and a relation declared twice."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.dialect.durations import DurationError, interval_millis
from streamjoin.dialect.errors import span
from streamjoin.dialect.flavours import JoinModel
from streamjoin.dialect.nodes import AggregationWindow, CreateRelation, Duration, StreamQuery, ViewDefinition
from streamjoin.plan import registry_columns
from streamjoin.plan.asof import is_asof
from streamjoin.plan.relations import VIEW_HINT, table_name
from streamjoin.plan.scope import Context

# Select args a continuous query cannot honour -> (what it is, what to write instead).
_UNSUPPORTED = {
    "limit": ("LIMIT", "a streaming query never ends, so it has no last row to stop at: remove it"),
    "order": ("ORDER BY", "results are emitted as the inputs arrive: remove it"),
    "distinct": ("SELECT DISTINCT", "GROUP BY the selected columns instead"),
    "qualify": ("QUALIFY", "filter in a query that reads this one's result"),
    "with_": ("WITH ... AS (a common table expression)", f"declare it as its own query ({VIEW_HINT})"),
}


_WITH_QUERIES = (CreateRelation, ViewDefinition, exp.Insert, exp.Query, StreamQuery)


def check_statement(ctx: Context, statement: exp.Expr, declared: dict[str, exp.Expr]) -> None:
    """`declared`: lower-cased name -> the name node of each relation this text declared so far.
    A statement of another kind is left to the planner, which rejects it as a whole."""
    if not isinstance(statement, _WITH_QUERIES):
        return
    for node in statement.find_all(exp.Interval, Duration):
        try:
            interval_millis(node) if isinstance(node, exp.Interval) else node.millis
        except DurationError as error:
            raise ctx.error("interval" if isinstance(node, exp.Interval) else "duration", str(error), node) from None
    for stream_query in statement.find_all(StreamQuery):
        emit = stream_query.args.get("emit")
        if emit is not None and emit.name == "FINAL" and not _windowed_aggregation(stream_query.this):
            raise ctx.error("emit-final", "EMIT FINAL emits a windowed aggregate once its window closes, and this "
                            "query has no WINDOW TUMBLING|HOPPING|SESSION (...) GROUP BY: write EMIT CHANGES", emit)
    top = _query_of(statement)
    if isinstance(top, exp.SetOperation):
        raise ctx.error("unsupported-clause", f"{top.key.upper()} is not supported: write one query per input, "
                        "each INSERT INTO the same sink", top)
    for select in statement.find_all(exp.Select):
        nested = None if select is top else _nested_query(ctx, select)
        if nested is False:
            raise ctx.error("subquery", f"a subquery is not supported here: declare it as its own query "
                            f"({VIEW_HINT}) and join or filter with that", select.parent or select)
        for arg, (what, instead) in _UNSUPPORTED.items():
            if arg == "distinct" and nested == "test":
                continue  # IN / EXISTS: duplicates do not change which rows match
            if select.args.get(arg):
                raise ctx.error("unsupported-clause", f"{what} is not supported: {instead}", select.args[arg])
        if select.args.get("having") and not ctx.flavour.having_filters_groups:
            raise ctx.error("unsupported-clause", "HAVING is not supported in this flavour: filter the aggregate "
                            "where its result is read (WITH counts AS (SELECT TABLE ... GROUP BY ...); then "
                            "SELECT TABLE * FROM counts WHERE ...)", select.args["having"])
        if not select.expressions:
            raise ctx.error("empty-select", "the SELECT list is empty: name the columns to emit, or *", select)
        if select.args.get("from_") is not None:
            _check_time_clauses(ctx, select)
            registry_columns.check_joined_formats(ctx, select)
    if isinstance(statement, CreateRelation):
        _check_declared_once(ctx, statement, declared)


# What bounds a join in time, per join model: where a clause of another model is written.
_TIME_BOUND = {
    JoinModel.KEYED: "bound a stream-stream join with WITHIN after the joined relation "
                     "(JOIN r WITHIN 1 HOUR ON ...); a stream-table join reads the table's latest row",
    JoinModel.RELATIONAL: "bound a stream-stream join by time in ON (an interval join: "
                          "AND l.ts BETWEEN r.ts - INTERVAL '1' HOUR AND r.ts), or join a versioned "
                          "table FOR SYSTEM_TIME AS OF the left time attribute",
    JoinModel.WINDOWED: "give each stream an OVER window (JOIN r OVER (RANGE INTERVAL '1' HOUR "
                        "PRECEDING) AS r ON ...); a stream-table join reads the table as the query starts",
}


def _check_time_clauses(ctx: Context, select: exp.Select) -> None:
    """WITHIN, OVER and FOR SYSTEM_TIME AS OF mean something in one join model each; written in
    another they would be ignored, so they are rejected (ASOF joins check their own clauses)."""
    model = ctx.flavour.join_model
    for named in select.args.get("windows") or [] if model is JoinModel.WINDOWED else []:
        _check_join_window(ctx, named)
    first, joins = select.args["from_"].this, select.args.get("joins") or []
    relations = [(first, joins[0] if joins else None, True)] + [(join.this, join, False) for join in joins]
    for table, join, leftmost in relations:
        if join is not None and is_asof(join):
            continue
        within, window, version = (table.args.get(arg) for arg in ("within", "window", "version"))
        if within is not None and within.args.get("before") is None:
            raise ctx.error("grace-without-within", "GRACE PERIOD extends a join window: write the window "
                            "first, WITHIN 10 SECONDS GRACE PERIOD 5 SECONDS", within)
        _check_repeated_within(ctx, within)
        if isinstance(window, exp.Window):
            _check_join_window(ctx, window)
        written = (("WITHIN", within, JoinModel.KEYED), ("OVER", window, JoinModel.WINDOWED),
                   ("FOR SYSTEM_TIME AS OF", version, JoinModel.RELATIONAL))
        for clause, node, owner in written:
            if node is not None and model is not owner:
                raise ctx.error("time-clause", f"{clause} does not bound a join in this flavour: "
                                f"{_TIME_BOUND[model]}", node)
        on_the_joined = (("WITHIN", within, "FROM a JOIN b WITHIN 1 HOUR ON ..."),
                         ("FOR SYSTEM_TIME AS OF", version, "FROM s JOIN t FOR SYSTEM_TIME AS OF s.ts AS t ON ..."))
        for clause, node, example in on_the_joined:
            if node is not None and leftmost:
                raise ctx.error("time-clause", f"{clause} belongs to the joined (right) relation: {example}", node)


def _check_repeated_within(ctx: Context, within: exp.Expr | None) -> None:
    """Lenses' grammar places WITHIN after the joined source and after ON, and its document writes
    both at once: the same window twice means it once; two different windows have no meaning."""
    repeated = within.args.get("repeated") if within is not None else None
    if repeated is None:
        return
    millis = [tuple(d.millis if d is not None else None for d in (w.args.get(a) for a in ("before", "after", "grace")))
              for w in (within, repeated)]
    if millis[0] != millis[1]:
        shown = [", ".join(f"{a} {m} ms" for a, m in zip(("before", "after", "grace"), w) if m is not None)
                 for w in millis]
        raise ctx.error("within-repeated", f"this join's window is written twice with different values "
                        f"({shown[0]}; {shown[1]}): write one WITHIN, after the joined source or after ON", repeated)


def _check_join_window(ctx: Context, window: exp.Expr) -> None:
    """An s-Server join window is the rows of a stream within RANGE / ROWS of the current row, in
    ROWTIME order and over every key: an ORDER BY or PARTITION BY in it would change which rows
    it holds, and no operator here honours that, so it is rejected rather than dropped."""
    order, partition = window.args.get("order"), window.args.get("partition_by")
    if order is not None:
        ordered = order.expressions[0].this if order.expressions else order
        floor = ordered if isinstance(ordered, exp.Floor) else None
        unit = floor.args.get("to") if floor is not None else None
        if unit is not None:
            raise ctx.error("window-order-by", f"OVER (ORDER BY FLOOR(... TO {unit.name.upper()}) ...), a window of "
                            f"the rows of the current {unit.name.lower()} that empties when the next one starts, "
                            f"is not supported: write RANGE INTERVAL '1' {unit.name.upper()} PRECEDING for the rows "
                            f"of the last {unit.name.lower()}", floor)
        raise ctx.error("window-order-by", "a join window is ordered by ROWTIME and nothing else: remove ORDER BY "
                        "and write RANGE INTERVAL '1' MINUTE PRECEDING or ROWS 5 PRECEDING", order)
    if partition:
        raise ctx.error("window-order-by", "a join window holds the rows of every key (ON matches the keys): "
                        "remove PARTITION BY", partition[0])


def _nested_query(ctx: Context, select: exp.Select) -> str | bool:
    """What a nested SELECT is, where the flavour reads it: "derived" (a subquery in FROM / JOIN,
    switch derived_tables) or "test" (the query of WHERE [NOT] IN / EXISTS, switch
    subquery_joins); False where it is not read."""
    parent = select.parent
    if isinstance(parent, exp.Subquery) and isinstance(parent.parent, (exp.From, exp.Join)):
        return "derived" if ctx.flavour.derived_tables else False
    tested = isinstance(parent, exp.Exists) or (isinstance(parent, exp.Subquery) and isinstance(parent.parent, exp.In))
    return "test" if tested and ctx.flavour.subquery_joins else False


def _windowed_aggregation(query: exp.Expr | None) -> bool:
    """Whether `query` aggregates over a ksqlDB WINDOW TUMBLING|HOPPING|SESSION (...)."""
    return isinstance(query, exp.Select) and any(isinstance(w, AggregationWindow)
                                                 for w in query.args.get("windows") or [])


def _query_of(statement: exp.Expr) -> exp.Expr | None:
    """The query a statement runs (None for a declaration)."""
    query = statement.expression if isinstance(statement, (CreateRelation, exp.Insert, ViewDefinition)) else statement
    return query.this if isinstance(query, StreamQuery) else query


def _check_declared_once(ctx: Context, create: CreateRelation, declared: dict[str, exp.Expr]) -> None:
    name = table_name(create.this)
    earlier = declared.get(name.lower())
    if earlier is not None and not create.args.get("replace") and not create.args.get("exists"):
        line = ctx.sql.count("\n", 0, span(earlier)[0] or 0) + 1
        raise ctx.error("duplicate-relation", f"{name} is already declared (line {line}): use another name, or "
                        "CREATE OR REPLACE to redefine it", create.this)
    declared[name.lower()] = create.this
