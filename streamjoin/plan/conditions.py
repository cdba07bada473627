"""Join conditions: equi-key pairs, residual predicates and the time bounds inside them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from streamjoin.dialect.durations import WINDOW_UNITS, DurationError, interval_millis, to_millis
from streamjoin.plan.scope import Context, relations


@dataclass
class SplitCondition:
    """A condition split into `pairs` (left expr, right expr) of equalities with one input on
    each side, and `residual` conjuncts (everything else), each still as written (resolved)."""

    pairs: list[tuple[exp.Expr, exp.Expr]]
    residual: list[exp.Expr]

    @property
    def residual_predicate(self) -> exp.Expr | None:
        return exp.and_(*self.residual) if self.residual else None


def conjuncts(condition: exp.Expr | None) -> list[exp.Expr]:
    if condition is None:
        return []
    condition = condition.unnest()
    if isinstance(condition, exp.And):
        return conjuncts(condition.left) + conjuncts(condition.right)
    return [condition]


def split(condition: exp.Expr | None, left: set[str], right: set[str]) -> SplitCondition:
    pairs, residual = [], []
    for conjunct in conjuncts(condition):
        if isinstance(conjunct, exp.EQ):
            lhs, rhs = relations(conjunct.left), relations(conjunct.right)
            if lhs and rhs and lhs <= left and rhs <= right:
                pairs.append((conjunct.left, conjunct.right))
                continue
            if lhs and rhs and lhs <= right and rhs <= left:
                pairs.append((conjunct.right, conjunct.left))
                continue
        residual.append(conjunct)
    return SplitCondition(pairs, residual)


def check_single_table_sides(ctx: Context, condition: exp.Expr, original: exp.Expr) -> None:
    """Lenses' ON rules: `=` with one table on each side, or a predicate over a single table,
    combined with AND only."""
    for conjunct, written in zip(conjuncts(condition), conjuncts(original)):
        if len(relations(conjunct)) <= 1:
            continue
        if isinstance(conjunct, exp.EQ):
            if len(relations(conjunct.left)) == 1 and len(relations(conjunct.right)) == 1:
                continue
            raise ctx.error("lenses-on-expression", "invalid ON expression: more than one table is "
                            "referenced on one side of the equality operator", written)
        raise ctx.error("lenses-on-expression", "invalid ON expression: a boolean expression not "
                        "separated by AND references more than one table", written)


def interval_ms(node: exp.Expr) -> int | None:
    """An INTERVAL literal in milliseconds (every INTERVAL of a statement was read once before it
    is planned, see planner.check_intervals), None for anything else."""
    return interval_millis(node) if isinstance(node, exp.Interval) else None


def duration_ms(text: str) -> int | None:
    """'10 SECONDS', '1 second', '500 MILLISECONDS' (a WITH property value) -> milliseconds."""
    parts = text.split()
    if len(parts) != 2 or parts[1].upper() not in WINDOW_UNITS:
        return None
    try:
        return to_millis(parts[0], WINDOW_UNITS[parts[1].upper()], text)
    except DurationError:
        return None


def _time_offset(node: exp.Expr) -> tuple[exp.Column, int] | None:
    """`col` -> (col, 0); `col - INTERVAL 'n' UNIT` -> (col, -n ms); `col + INTERVAL ...` -> +."""
    node = node.unnest()
    if isinstance(node, exp.Column):
        return node, 0
    if isinstance(node, (exp.Add, exp.Sub)) and isinstance(node.left.unnest(), exp.Column):
        millis = interval_ms(node.right.unnest())
        if millis is not None:
            return node.left.unnest(), millis if isinstance(node, exp.Add) else -millis
    return None


def interval_bounds(conjunct: exp.Expr, left_times: set[str], right_times: set[str]):
    """(left_time, right_time, lower_ms, upper_ms) for `a BETWEEN b + x AND b + y` over the two
    inputs' time attributes (qualified sql names), else None."""
    if not isinstance(conjunct, exp.Between):
        return None
    subject = _time_offset(conjunct.this)
    low, high = _time_offset(conjunct.args["low"]), _time_offset(conjunct.args["high"])
    if not (subject and low and high) or subject[1] or low[0].sql() != high[0].sql():
        return None
    this, other = subject[0].sql(), low[0].sql()
    if this in left_times and other in right_times:
        return subject[0], low[0], low[1], high[1]
    if this in right_times and other in left_times:
        return low[0], subject[0], -high[1], -low[1]
    return None
