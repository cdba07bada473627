"""Compile sqlglot expressions into Python callables with SQL semantics.

    scope = Scope({"o": {"id": "INT", "ordertime": "TIMESTAMP(3)"}, "s": ["orderId", "shiptime"]})
    within = compile_expr(sqlglot.parse_one(
        "o.ordertime BETWEEN s.shiptime - INTERVAL '4' HOUR AND s.shiptime"), scope)
    within({"o": {"id": 1, "ordertime": 36_000_000}, "s": {"orderId": 1, "shiptime": 46_800_000}})
    # -> True;  with "s": None (null-padded by an outer join) -> None

An environment (`Env`) maps each relation alias to its current row, or to None when an outer join
null-pads that relation (all its columns are NULL). Compilation resolves every column once;
evaluation is a chain of closures. Value representations: see `streamjoin.expr.values`
(timestamps are int epoch millis). Functions and their dialect differences: docs/functions.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from sqlglot import exp

from streamjoin.dialect.flavours import Flavour
from streamjoin.dialect.types import TIMESTAMP, SqlType, TypeSyntaxError, parse_type
from streamjoin.expr.core import (
    RESULT_TYPES,
    Env,
    Evaluator,
    ExpressionError,
    compile_node,
    compiles,
    constant,
    guarded,
    reads_column,
)
from streamjoin.expr.values import (
    format_timestamp,
    interval_millis,
    is_timestamp_type,
    parse_timestamp,
    struct_field,
    to_millis,
)

__all__ = [
    "Env",
    "Evaluator",
    "ExprOptions",
    "ExpressionError",
    "Scope",
    "compile_expr",
    "compile_predicate",
    "format_timestamp",
    "interval_millis",
    "parse_timestamp",
    "to_millis",
    "ROWTIME_FIELD",
    "KEY_FIELD",
]

# Row fields the task fills for the pseudo-columns when a relation does not declare a column of
# that name: ROWTIME (event time, epoch ms), ROWPARTITION and ROWOFFSET (where the record was
# read; ksqlDB), and _key (the record key; Lenses). `_value` (Lenses) is the row without them.
ROWTIME_FIELD = "ROWTIME"
KEY_FIELD = "_key"
RECORD_FIELDS = (ROWTIME_FIELD, "ROWPARTITION", "ROWOFFSET", "WINDOWSTART", "WINDOWEND", KEY_FIELD)
_LENSES_PSEUDO: dict[str, SqlType | None] = {"_KEY": None, "_VALUE": None}


@dataclass(frozen=True)
class ExprOptions:
    """The flavour's expression semantics (`of(flavour)`; the defaults are ksqlDB's):
    `concat_skips_nulls`: CONCAT treats NULL as '' (else NULL); `zero_based_substring`: SUBSTR
    counts from 0 with an exclusive end (docs/functions.md); `double_quoted_strings`: an
    unresolvable double-quoted name is a string literal (Lenses' `substr(name, 1) = "J"`);
    `array_index_base`: the subscript of an array's first element; `cast_failure_is_null`: a CAST
    that cannot convert its value yields NULL (ksqlDB) instead of failing the record (TRY_CAST
    always yields NULL); `sum_starts_at_zero`: SUM over no non-NULL value is 0 (ksqlDB), not NULL;
    `pseudo_columns`: (name, type) of the columns every relation has
    undeclared (ksqlDB's ROWTIME is epoch millis as a BIGINT, beside ROWPARTITION, ROWOFFSET and
    a windowed key's WINDOWSTART and WINDOWEND; s-Server's ROWTIME is a TIMESTAMP)."""

    concat_skips_nulls: bool = True
    zero_based_substring: bool = False
    double_quoted_strings: bool = False
    array_index_base: int = 1
    cast_failure_is_null: bool = True
    sum_starts_at_zero: bool = True
    pseudo_columns: tuple[tuple[str, str], ...] = (("ROWTIME", "BIGINT"), ("ROWPARTITION", "INT"), ("ROWOFFSET", "BIGINT"),
                                                   ("WINDOWSTART", "BIGINT"), ("WINDOWEND", "BIGINT"))

    @classmethod
    def of(cls, flavour: Flavour) -> "ExprOptions":
        return cls(concat_skips_nulls=flavour.concat_skips_nulls, zero_based_substring=flavour.zero_based_substring,
                   double_quoted_strings=flavour.double_quoted_strings,
                   cast_failure_is_null=flavour.cast_failure_is_null, sum_starts_at_zero=flavour.sum_starts_at_zero,
                   pseudo_columns=flavour.pseudo_columns + tuple((name, "BIGINT") for name in flavour.window_columns))


@dataclass(frozen=True)
class ColumnRef:
    """A resolved column: `alias` None means ROWTIME across every relation (s-Server: the
    later input rowtime). `fields` are struct fields read from the column's value."""

    alias: str | None
    column: str
    type: SqlType | None
    fields: tuple[str, ...] = ()
    pseudo: bool = False


class Scope:
    """The relations an expression can see: alias -> column names, or name -> declared type
    (a catalog `SqlType`, or a type string parsed here once; None: known only at run time).
    TIMESTAMP columns are read as epoch millis.

    Names match case-insensitively (ksqlDB upper-cases unquoted names, Flink and Lenses keep
    them); an exact match wins. Unqualified names resolve when exactly one relation has them."""

    def __init__(
        self,
        relations: Mapping[str, Iterable[str] | Mapping[str, SqlType | str | None]],
        options: ExprOptions = ExprOptions(),
    ):
        self.options = options
        self.relations: dict[str, dict[str, SqlType | None]] = {
            alias: {name: parse_type(kind) if isinstance(kind, str) else kind for name, kind in columns.items()}
            if isinstance(columns, Mapping)
            else dict.fromkeys(columns)
            for alias, columns in relations.items()
        }
        self.pseudo_types: dict[str, SqlType | None] = {
            **{name: parse_type(kind) for name, kind in options.pseudo_columns}, **_LENSES_PSEUDO}

    def find_alias(self, name: str) -> str | None:
        return _match(name, self.relations, "relation")

    def resolve(self, parts: list[str], node: exp.Expression | None = None) -> ColumnRef:
        """`[alias, column, field...]` or `[column, field...]` -> ColumnRef. Relation names may
        contain dots (`stocks.order_quantity`), so the longest matching prefix is the alias."""
        for split in range(len(parts) - 1, 0, -1):
            alias = self.find_alias(".".join(parts[:split]))
            if alias is not None:
                return self._in_relation(alias, parts[split], parts[split + 1 :], node)
        name, fields = parts[0], tuple(parts[1:])
        owners = [alias for alias, columns in self.relations.items() if _match(name, columns, "column")]
        if len(owners) == 1:
            return self._in_relation(owners[0], name, fields, node)
        if len(owners) > 1:
            raise ExpressionError(f"column {name!r} is ambiguous: it is in {', '.join(owners)}", node)
        pseudo = name.upper()
        if pseudo == ROWTIME_FIELD or (pseudo in self.pseudo_types and len(self.relations) == 1):
            alias = next(iter(self.relations)) if len(self.relations) == 1 else None
            return ColumnRef(alias, pseudo, self.pseudo_types.get(pseudo), fields, pseudo=True)
        if pseudo in self.pseudo_types:
            raise ExpressionError(f"{name} is ambiguous: qualify it with one of {self._aliases()}", node)
        if fields:
            raise ExpressionError(
                f"unknown relation or column {name!r} in {'.'.join(parts)} (relations: {self._aliases()})", node
            )
        raise ExpressionError(f"unknown column {name!r} (relations: {self._aliases()})", node)

    def _in_relation(self, alias: str, name: str, fields: Iterable[str], node) -> ColumnRef:
        columns = self.relations[alias]
        column = _match(name, columns, "column")
        if column is not None:
            return ColumnRef(alias, column, columns[column], tuple(fields))
        if name.upper() in self.pseudo_types:
            return ColumnRef(alias, name.upper(), self.pseudo_types[name.upper()], tuple(fields), pseudo=True)
        raise ExpressionError(
            f"unknown column {name!r} in {alias} (columns: {', '.join(columns) or 'none'})", node
        )

    def _aliases(self) -> str:
        return ", ".join(self.relations) or "none"

    def static_type(self, node: exp.Expression) -> SqlType | None:
        """TIMESTAMP (plain TIMESTAMP(3)) when `node` certainly yields a timestamp (so CAST to
        STRING formats it and a string literal compared with it is parsed), else the declared
        type (a CAST: its target by name) or None."""
        if isinstance(node, exp.Paren):
            return self.static_type(node.this)
        if isinstance(node, exp.Column):
            try:
                declared = self.resolve(_column_parts(node), node)
            except ExpressionError:
                return None
            kind = None if declared.fields else declared.type
            return TIMESTAMP if kind is not None and kind.is_timestamp else kind
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return _cast_type(node.to)
        if isinstance(node, exp.Dot):  # a struct field: its declared type
            struct = self.static_type(node.this)
            fields = struct.fields if struct is not None and struct.name == "STRUCT" else ()
            return next((t for name, t in fields if name.casefold() == node.expression.name.casefold()), None)
        if isinstance(node, (exp.Floor, exp.Ceil)) and node.args.get("to") is not None:
            return TIMESTAMP
        if isinstance(node, exp.Anonymous) and node.name.upper() in RESULT_TYPES:
            result = RESULT_TYPES[node.name.upper()]
            return TIMESTAMP if result.is_timestamp else result
        if isinstance(node, (exp.Add, exp.Sub)) and (
            isinstance(node.expression, exp.Interval) or isinstance(node.this, exp.Interval)
        ):
            return TIMESTAMP
        return None

    def is_timestamp(self, node: exp.Expression) -> bool:
        """Whether `node` certainly yields a timestamp (see `static_type`)."""
        kind = self.static_type(node)
        return kind is not None and kind.is_timestamp


def _cast_type(to: exp.DataType) -> SqlType | None:
    """A CAST target by its sqlglot type name (parameters dropped, as the sink has always typed
    it); None for a name with no `SqlType` (DATE, ARRAY without elements ...)."""
    name = to.this.name
    if is_timestamp_type(name):
        return TIMESTAMP
    try:
        return parse_type(name)
    except TypeSyntaxError:
        return None


def _match(name: str, names: Iterable[str], what: str) -> str | None:
    """`name` itself if present, else the one name equal ignoring case."""
    if name in names:
        return name
    folded = [candidate for candidate in names if candidate.casefold() == name.casefold()]
    if len(folded) > 1:
        raise ExpressionError(f"{what} {name!r} matches {folded} ignoring case; quote it exactly")
    return folded[0] if folded else None


def _column_parts(node: exp.Column) -> list[str]:
    return [part.name for part in node.parts]


def compile_expr(expression: exp.Expression, scope: Scope) -> Evaluator:
    """`expression` -> `env -> value`. Compile errors and evaluation errors are
    ExpressionErrors naming the expression (and its position when the parser recorded it)."""
    return guarded(compile_node(expression, scope), expression)


def compile_predicate(expression: exp.Expression, scope: Scope) -> Evaluator:
    """A WHERE / ON condition: True only when the expression is TRUE (NULL and FALSE reject)."""
    evaluate = compile_expr(expression, scope)
    return lambda env: evaluate(env) is True


@compiles(exp.Column)
def _column(node: exp.Column, scope: Scope) -> Evaluator:
    parts = _column_parts(node)
    if isinstance(node.this, exp.Star):
        raise ExpressionError("* is not a value; the planner expands it", node)
    try:
        ref = scope.resolve(parts, node)
    except ExpressionError:
        quoted = len(parts) == 1 and isinstance(node.this, exp.Identifier) and node.this.quoted
        if quoted and scope.options.double_quoted_strings:
            return constant(parts[0])
        raise
    read = _reader(ref)
    for field in ref.fields:
        read = field_reader(read, field)
    if ref.type is not None and ref.type.is_timestamp and not ref.fields:
        return _as_millis(read)
    return read


def _reader(ref: ColumnRef) -> Evaluator:
    if ref.alias is None:  # unqualified ROWTIME over several relations: the later rowtime
        def latest_rowtime(env: Env) -> Any:
            times = [row.get(ROWTIME_FIELD) for row in env.values() if row is not None]
            times = [to_millis(t) for t in times if t is not None]
            return max(times) if times else None

        return latest_rowtime
    alias, column = ref.alias, ref.column
    if ref.pseudo and column == "_VALUE":
        def read_value(env: Env) -> Any:
            row = env[alias]
            if row is None:
                return None
            return {k: v for k, v in row.items() if k not in RECORD_FIELDS}

        return read_value
    if ref.pseudo and column == "_KEY":
        column = KEY_FIELD

    def read(env: Env) -> Any:
        row = env[alias]
        return None if row is None else row.get(column)

    return reads_column(read, alias, column)


def _as_millis(read: Evaluator) -> Evaluator:
    def read_millis(env: Env) -> Any:
        value = read(env)
        if value is None or type(value) is int:
            return value
        return to_millis(value)

    return read_millis


def field_reader(read: Evaluator, field: str) -> Evaluator:
    def read_field(env: Env) -> Any:
        value = read(env)
        return None if value is None else struct_field(value, field)

    return read_field
