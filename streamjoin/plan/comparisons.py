"""The static kind of a comparison's operands, for flavours that reject comparing values of
different kinds (ksqlDB: `SUM(x) > '100'` is an error, not a string comparison or a cast)."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.plan.scope import Context, SelectScope

_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE)
_NUMBERS = {"TINYINT", "SMALLINT", "INT", "BIGINT", "FLOAT", "DOUBLE", "DECIMAL"}
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod)
# kinds that compare with each other: a string literal is read as a timestamp where one is compared
_COMPATIBLE = {frozenset({"STRING", "TIMESTAMP"})}


def kind_of(scope: SelectScope, node: exp.Expr) -> str | None:
    """NUMBER, STRING, BOOLEAN, TIMESTAMP, another type name, or None when not known statically."""
    node = node.unnest()
    if isinstance(node, exp.Literal):
        return "STRING" if node.is_string else "NUMBER"
    if isinstance(node, exp.Boolean):
        return "BOOLEAN"
    if isinstance(node, exp.Count):
        return "NUMBER"
    if isinstance(node, (exp.Sum, exp.Avg, exp.Min, exp.Max)):
        return kind_of(scope, node.this)
    if isinstance(node, _ARITHMETIC):
        kinds = {kind_of(scope, node.left), kind_of(scope, node.right)}
        return "NUMBER" if kinds == {"NUMBER"} else None
    if isinstance(node, (exp.Column, exp.Cast)):
        try:
            declared = scope.type_of(node)
        except ValueError:  # a CAST to a type SqlType does not name
            return None
        if declared is None or declared.name in ("ANY", "UNKNOWN"):
            return None
        if declared.name in _NUMBERS:
            return "NUMBER"
        return "TIMESTAMP" if declared.is_timestamp else declared.name
    return None


def check(ctx: Context, scope: SelectScope, predicate: exp.Expr | None, clause: str) -> None:
    """Reject arithmetic on a BOOLEAN or between a STRING and a number (every flavour: none of the
    four adds them), and, where the flavour says so, a comparison between operands of different
    kinds, naming both."""
    if predicate is None:
        return
    for arithmetic in predicate.find_all(*_ARITHMETIC):
        kinds = (kind_of(scope, arithmetic.left), kind_of(scope, arithmetic.right))
        if "BOOLEAN" in kinds or set(kinds) == {"STRING", "NUMBER"}:
            raise ctx.error("arithmetic-types", f"{clause}: {arithmetic.sql()} applies {arithmetic.key.upper()} to "
                            f"{' and '.join('a ' + (k or 'value').lower() for k in kinds)}; CAST the operand to a "
                            "number (CAST(x AS INT))", arithmetic)
    if not ctx.flavour.comparisons_need_matching_types:
        return
    for comparison in predicate.find_all(*_COMPARISONS):
        left, right = kind_of(scope, comparison.left), kind_of(scope, comparison.right)
        if left and right and left != right and frozenset({left, right}) not in _COMPATIBLE:
            raise ctx.error("comparison-types", f"{clause} compares {comparison.left.sql()} (a {left.lower()}) with "
                            f"{comparison.right.sql()} (a {right.lower()}); CAST one side", comparison)
