"""The split of an aggregate SELECT list into group keys, aggregate calls (accumulators:
`streamjoin.expr.accumulators`) and post-aggregate expressions, and a group's running state."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from streamjoin.expr.accumulators import ACCUMULATORS, Accumulator, CountRows, Distinct, Sum, SumFromZero
from streamjoin.expr.compile import Env, Evaluator, ExpressionError, Scope, compile_expr
from streamjoin.expr.forms import WINDOW_FUNCTIONS

AGG_RELATION, KEY_RELATION = "__agg__", "__key__"


@dataclass(frozen=True)
class AggregateCall:
    """One aggregate in the SELECT list; `argument` is None for COUNT(*)."""

    sql: str
    accumulator: Callable[[], Accumulator]
    argument: Evaluator | None


@dataclass
class GroupState:
    """One group's running aggregates; `rows` = rows added minus rows retracted (0: empty)."""

    accumulators: list[Accumulator]
    rows: int = 0
    emitted: bool = False  # its current result row is out (HAVING may withhold or delete it)


@dataclass
class AggregatePlan:
    """A compiled aggregate SELECT: `group_key(env)` picks the group, `add`/`retract` fold a
    row into its `GroupState`, `result(key, state)` evaluates the SELECT list."""

    group_by: list[exp.Expression]
    calls: list[AggregateCall]
    output_names: list[str]
    key_evaluators: list[Evaluator] = field(repr=False)
    output_evaluators: list[Evaluator] = field(repr=False)
    having: Evaluator | None = field(default=None, repr=False)  # over the same env as the outputs

    def group_key(self, env: Env) -> tuple:
        return tuple(key(env) for key in self.key_evaluators)

    def new_state(self) -> GroupState:
        return GroupState([call.accumulator() for call in self.calls])

    def add(self, state: GroupState, env: Env) -> None:
        state.rows += 1
        for call, accumulator in zip(self.calls, state.accumulators):
            accumulator.add(None if call.argument is None else call.argument(env))

    def merge(self, state: GroupState, other: GroupState) -> None:
        """Fold `other` (another session of the same group) into `state`; see `can_merge`."""
        state.rows += other.rows
        for accumulator, others in zip(state.accumulators, other.accumulators):
            accumulator.merge(others)

    def retract(self, state: GroupState, env: Env) -> None:
        if state.rows == 0:
            raise ValueError("retracting a row from an empty group")
        state.rows -= 1
        for call, accumulator in zip(self.calls, state.accumulators):
            accumulator.retract(None if call.argument is None else call.argument(env))

    def result(self, key: tuple, state: GroupState) -> dict[str, Any] | None:
        """The group's result row; None when HAVING rejects the group."""
        env = {
            KEY_RELATION: {f"k{i}": value for i, value in enumerate(key)},
            AGG_RELATION: {f"a{i}": acc.result() for i, acc in enumerate(state.accumulators)},
        }
        if self.having is not None and self.having(env) is not True:
            return None
        return {name: evaluate(env) for name, evaluate in zip(self.output_names, self.output_evaluators)}


def compile_aggregates(
    select_expressions: Sequence[exp.Expression], scope: Scope, group_by: Sequence[exp.Expression] = (),
    having: exp.Expression | None = None, merging: bool = False,
) -> AggregatePlan:
    """Split `SELECT name, SUM(o.amount * r.rate) AS amount ... GROUP BY name` into group keys
    (evaluated on input rows), aggregate calls (arguments evaluated on input rows) and output
    expressions (evaluated on the group key and the aggregate results: `SUM(x) / COUNT(*)` works).
    A column outside every aggregate must be a GROUP BY expression. `having`: the HAVING
    predicate, evaluated like an output expression. `merging`: groups are merged (session
    windows), so every aggregate must be able to merge."""
    group_by = list(group_by)
    fingerprints = [_fingerprint(key, scope) for key in group_by]
    calls: list[AggregateCall] = []

    def rewrite(node: exp.Expression) -> exp.Expression:
        fingerprint = _fingerprint(node, scope)
        if fingerprint in fingerprints:
            return exp.column(f"k{fingerprints.index(fingerprint)}", table=KEY_RELATION)
        if isinstance(node, exp.Window):
            raise ExpressionError(WINDOW_FUNCTIONS, node, rule="window-function")
        if isinstance(node, exp.AggFunc):
            calls.append(_aggregate_call(node, scope, merging))
            return exp.column(f"a{len(calls) - 1}", table=AGG_RELATION)
        if isinstance(node, exp.Column):
            raise ExpressionError(f"column {node.sql()} must be in GROUP BY or inside an aggregate: add it to "
                                  "GROUP BY, or aggregate it (e.g. MAX(x))", node, rule="group-by")
        for name, child in list(node.args.items()):
            if isinstance(child, exp.Expression):
                node.set(name, rewrite(child))
            elif isinstance(child, list):
                node.set(name, [rewrite(c) if isinstance(c, exp.Expression) else c for c in child])
        return node

    rewritten = [rewrite(expression.copy()) for expression in select_expressions]
    having_rewritten = rewrite(having.copy()) if having is not None else None
    placeholders = Scope(
        {
            KEY_RELATION: {f"k{i}": scope.static_type(key) for i, key in enumerate(group_by)},
            AGG_RELATION: [f"a{i}" for i in range(len(calls))],
        },
        scope.options,
    )
    return AggregatePlan(
        group_by=group_by,
        calls=calls,
        output_names=[_output_name(expression) for expression in select_expressions],
        key_evaluators=[compile_expr(key, scope) for key in group_by],
        output_evaluators=[compile_expr(expression, placeholders) for expression in rewritten],
        having=compile_expr(having_rewritten, placeholders) if having_rewritten is not None else None,
    )


def _aggregate_call(node: exp.AggFunc, scope: Scope, merging: bool = False) -> AggregateCall:
    accumulator_class = ACCUMULATORS.get(type(node))
    if accumulator_class is None:
        raise ExpressionError(f"unsupported aggregate {type(node).__name__.upper()}: docs/functions.md lists "
                              "the aggregates there are", node, rule="aggregate")
    if accumulator_class is Sum and scope.options.sum_starts_at_zero:
        accumulator_class = SumFromZero
    argument = node.this
    # DISTINCT merges through its inner aggregate's add, COUNT(*) by its count
    if merging and not (isinstance(argument, (exp.Star, exp.Distinct)) or accumulator_class.can_merge()):
        raise ExpressionError(f"{type(node).__name__.upper()} cannot combine the partial results of two sessions, "
                              "which WINDOW SESSION does when a record bridges them: use a TUMBLING or HOPPING "
                              "window, or another aggregate", node, rule="session-aggregate")
    if isinstance(argument, exp.Star):  # COUNT(*)
        return AggregateCall(node.sql(), CountRows, None)
    distinct = isinstance(argument, exp.Distinct)
    if distinct:
        if len(argument.expressions) != 1:
            raise ExpressionError("DISTINCT aggregates take one argument", node, rule="aggregate")
        argument = argument.expressions[0]
    if argument is None or list(argument.find_all(exp.AggFunc)):
        raise ExpressionError("an aggregate needs one argument and cannot nest aggregates", node, rule="aggregate")
    factory = (lambda: Distinct(accumulator_class())) if distinct else accumulator_class
    return AggregateCall(node.sql(), factory, compile_expr(argument, scope))


def _fingerprint(node: exp.Expression, scope: Scope) -> Any:
    """Equal for two spellings of the same column (`name`, `c.name`, `C.NAME`); structural
    equality for any other expression."""
    if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
        try:
            ref = scope.resolve([part.name for part in node.parts], node)
            return ("column", ref.alias, ref.column, ref.fields)
        except ExpressionError:
            pass
    return node


def _output_name(expression: exp.Expression) -> str:
    """The alias, else the column name, else the expression text."""
    if isinstance(expression, (exp.Alias, exp.Column)):
        return expression.alias_or_name
    return expression.sql()
