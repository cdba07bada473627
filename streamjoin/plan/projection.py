"""The projection of one SELECT: output column names (stars expanded, each flavour's naming) and
the split of the output record into key and value (each flavour's `output_key`)."""

from __future__ import annotations

from sqlglot import exp

from streamjoin.dialect.flavours import OutputKey
from streamjoin.plan.inputs import Input
from streamjoin.plan.scope import Context, SelectScope, col
from streamjoin.plan.upsert_keys import projected_key


def name_of(ctx: Context, node: exp.Expr, index: int) -> str:
    identifier = node.args.get("alias") if isinstance(node, exp.Alias) else node.this if isinstance(node, exp.Column) else None
    if isinstance(identifier, exp.TableAlias):
        identifier = identifier.this
    if identifier is None:
        return f"{ctx.flavour.expression_column_prefix}{index}"
    quoted = isinstance(identifier, exp.Identifier) and identifier.quoted
    name = identifier.name
    return name.upper() if ctx.flavour.upper_case_identifiers and not quoted else name


def expand_projection(ctx: Context, scope: SelectScope, select: exp.Select) -> list[tuple[str, exp.Expr, bool]]:
    """(output name, resolved expression, written node) per output column, stars expanded."""
    items, multi = [], len([e for e in scope.entries if e.source is not None or e.columns]) > 1
    for index, node in enumerate(select.expressions):
        star_entries = None
        if isinstance(node, exp.Star):
            star_entries = scope.entries
        elif isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            entry = scope.find(node.table)
            if entry is None:
                raise ctx.error("unknown-relation", f"unknown relation {node.table!r}", node)
            star_entries = [entry]
        if star_entries is None:
            items.append((name_of(ctx, node, index), scope.resolve(node.unalias()), node))
            continue
        items += [(name, expr, node) for name, expr in _star(ctx, scope, star_entries, multi)]
    return items


def _star(ctx: Context, scope: SelectScope, entries, multi: bool):
    using = [c for c in scope.using]
    out, seen_using = [], set()
    for name in using:  # standard SQL: USING columns once, first
        alias = scope.using[name]
        declared = scope.find(alias).column(name)
        out.append((_upper(ctx, declared), col(alias, declared)))
        seen_using.add(name)
    flavour = ctx.flavour
    for entry in entries:
        for column in entry.columns:
            if column.lower() in seen_using or (flavour.star_skips_key_column and column == "_key"):
                continue
            if entry.proctime == column and flavour.star_skips_proctime:
                continue
            name = f"{entry.alias}_{column}" if flavour.star_prefixes_alias and multi else column
            out.append((_upper(ctx, name), col(entry.alias, column)))
    return out


def _upper(ctx: Context, name: str) -> str:
    return name.upper() if ctx.flavour.upper_case_identifiers else name


def split_key(ctx: Context, current: Input, items, key_label):
    """The output key and value per the flavour's `output_key`: PROJECTED_COLUMN (ksqlDB) moves
    the projected column that provides the key into the key (value excludes it); otherwise the
    value keeps every projected column. s-Server ROWTIME is the record timestamp, not a value column."""
    values = {}
    for name, expr, written in items:
        if isinstance(expr, exp.Column) and not expr.table and expr.name.upper() == "ROWTIME":
            continue
        if name in values:
            raise ctx.error("duplicate-column", f"output column {name!r} appears twice; alias one of them", written)
        values[name] = expr
    key_exprs = current.node.key
    if ctx.flavour.output_key is OutputKey.UPSERT_KEY:
        return projected_key(current.node, values), values
    if ctx.flavour.output_key is OutputKey.KEY_PSEUDO_COLUMN:
        return ({"_key": key_exprs[0]} if len(key_exprs) == 1 else {}), values
    if ctx.flavour.output_key is OutputKey.NONE or not key_exprs:
        return {}, values
    names = current.key_names or ({key_exprs[0].sql()} if len(key_exprs) == 1 else set())
    for name, expr in values.items():
        if expr.sql() in names:
            return {name: expr}, {k: v for k, v in values.items() if k != name}
    label = key_label or (key_exprs[0].name.upper() if isinstance(key_exprs[0], exp.Column) else "KSQL_COL_0")
    if len(key_exprs) > 1:
        return {f"KSQL_COL_{i}": k for i, k in enumerate(key_exprs)}, values
    return {label: key_exprs[0]}, values
