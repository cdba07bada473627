"""A SELECT list -> the output columns: stars expanded, each column named per the flavour, and
the result key taken out of the projection per the flavour's `output_key` (ksqlDB's rules for
which projected column provides the key are in plan.keys)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from streamjoin.kinds import Kind
from streamjoin.dialect.flavours import OutputKey
from streamjoin.plan.inputs import Input
from streamjoin.plan.keys import KeyNaming, is_synthetic_reference
from streamjoin.plan.scope import Context, SelectScope, col
from streamjoin.plan.upsert_keys import projected_key

Item = tuple[str, exp.Expr, exp.Expr]  # (output name, resolved expression, node as written)


@dataclass
class Projected:
    """What the projection yields: key and value columns (name -> expression, in order)."""

    key: dict[str, exp.Expr]
    values: dict[str, exp.Expr]
    key_from_columns: bool = False  # the output key is the key columns' values, not the result's key


def expand(ctx: Context, scope: SelectScope, select: exp.Select, naming: KeyNaming,
           partitioned: bool = False) -> list[Item]:
    """(output name, resolved expression, written node) per output column, stars expanded.
    `partitioned`: the query ends in PARTITION BY."""
    sources = [e for e in scope.entries if e.source is not None or e.columns]
    multi = len(sources) > 1
    shared = _shared_names(ctx, sources) if multi and ctx.flavour.shared_names_prefix_alias else set()
    generated = _generated_names(ctx, sources)
    pseudo = partitioned and multi and ctx.flavour.partitioned_join_star_lists_pseudo_columns
    items: list[Item] = []
    for index, node in enumerate(select.expressions):
        star_entries = None
        if isinstance(node, exp.Star):
            star_entries = scope.entries
            if naming.synthetic:  # an unqualified star starts with the joins' synthetic key
                items.append((naming.synthetic, exp.Column(this=exp.to_identifier(naming.synthetic)), node))
        elif isinstance(node, exp.Column) and isinstance(node.this, exp.Star):
            entry = scope.find(node.table)
            if entry is None:
                raise ctx.error("unknown-relation", f"unknown relation {node.table!r} in {node.sql()}: "
                                f"{scope.relations_here()}", node)
            star_entries = [entry]
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Star):
            items += _struct_fields(ctx, scope, node)
            continue
        if star_entries is None:
            resolved = scope.resolve(node.unalias())
            items.append((_name_of(ctx, node, resolved, index, shared, generated), resolved, node))
            continue
        items += [(name, expr, node) for name, expr in _star(ctx, scope, star_entries, multi, pseudo)]
    return items


def _struct_fields(ctx: Context, scope: SelectScope, node: exp.Dot) -> list[Item]:
    """`struct->*`: one column per field of the STRUCT, named after the field."""
    struct = scope.resolve(node.this)
    declared = scope.type_of(struct)
    if declared is None or declared.name != "STRUCT":
        raise ctx.error("struct-fields", f"{node.this.sql()} is not a STRUCT column; ->* needs one", node)
    # a field name that needs quotes was quoted, so it keeps its case
    return [(_upper(ctx, name) if re.fullmatch(r"\w+", name) else name,
             exp.Dot(this=struct.copy(), expression=exp.to_identifier(name)), node) for name, _ in declared.fields]


def _shared_names(ctx: Context, sources) -> set[str]:
    """Column names (upper case) that more than one input has, the pseudo-columns included."""
    seen: dict[str, int] = {}
    for entry in sources:
        for name in {c.upper() for c in entry.columns} | {p for p, _ in ctx.flavour.pseudo_columns}:
            seen[name] = seen.get(name, 0) + 1
    return {name for name, count in seen.items() if count > 1}


def _generated_names(ctx: Context, sources):
    """Names for unnamed expressions: <prefix><position>, or (ksqlDB) <prefix>0, 1, ... counting
    the unnamed ones, starting past any such name an input already has."""
    prefix = ctx.flavour.expression_column_prefix
    if not ctx.flavour.generated_names_count_unnamed:
        return lambda index: f"{prefix}{index}"
    pattern = re.compile(re.escape(prefix) + r"(\d+)", re.IGNORECASE)
    taken = [int(m.group(1)) for e in sources for c in e.columns if (m := pattern.fullmatch(c))]
    counter = iter(range(max(taken, default=-1) + 1, 1 << 31))
    return lambda index: f"{prefix}{next(counter)}"


def _name_of(ctx: Context, node: exp.Expr, resolved: exp.Expr, index: int, shared: set[str], generated) -> str:
    if isinstance(node, exp.Alias):
        identifier = node.args["alias"]
        identifier = identifier.this if isinstance(identifier, exp.TableAlias) else identifier
    elif isinstance(node, exp.Column):
        identifier = node.this
    elif isinstance(node, exp.Dot):
        identifier = node.expression  # a struct field is named after the field
    else:
        return generated(index)
    name = folded(ctx, identifier)
    if isinstance(node, exp.Column) and resolved.table and name.upper() in shared:
        return _upper(ctx, f"{resolved.table}_{name}")  # a join's shared name: qualified by its input
    return name


def folded(ctx: Context, identifier: exp.Expr) -> str:
    quoted = isinstance(identifier, exp.Identifier) and identifier.quoted
    return identifier.name.upper() if ctx.flavour.upper_case_identifiers and not quoted else identifier.name


def _star(ctx: Context, scope: SelectScope, entries, multi: bool, pseudo: bool = False):
    """The columns `*` stands for; `pseudo`: each input's pseudo-columns too, first."""
    out, seen_using = [], set()
    for name, alias in scope.using.items():  # standard SQL: USING columns once, first
        declared = scope.find(alias).column(name)
        out.append((_upper(ctx, declared), col(alias, declared)))
        seen_using.add(name)
    flavour = ctx.flavour
    for entry in entries:
        if pseudo:
            out += [(_upper(ctx, f"{entry.alias}_{name}"), col(entry.alias, name))
                    for name, _ in flavour.pseudo_columns]
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


def split_key(ctx: Context, current: Input, items: list[Item], key_label: str | None, sink: str | None) -> Projected:
    """The output key and value per the flavour's `output_key`: PROJECTED_COLUMN (ksqlDB) moves
    the projected column that provides the key into the key (value excludes it); otherwise the
    value keeps every projected column. Where `rowtime_is_output_time` (s-Server), ROWTIME is the
    record timestamp, not a value column. `sink`: the relation a persistent query writes (None for
    a transient SELECT)."""
    values: dict[str, exp.Expr] = {}
    written: dict[str, exp.Expr] = {}
    reserved = {name.upper() for name in ctx.flavour.reserved_column_names}
    for name, expr, node in items:
        if name.upper() in reserved:
            raise ctx.error("reserved-column-name", f"{name.upper()} is a pseudo-column name and cannot name an "
                            "output column; give the column another alias", node)
        if (ctx.flavour.rowtime_is_output_time and isinstance(expr, exp.Column) and not expr.table
                and expr.name.upper() == "ROWTIME"):
            continue
        if name in values and ctx.flavour.numbers_repeated_output_names:
            name = next(f"{name}{n}" for n in range(len(items) + 1) if f"{name}{n}" not in values)
        if name in values:
            raise ctx.error("duplicate-column", f"output column {name!r} appears twice; alias one of them", node)
        values[name], written[name] = expr, node
    key_exprs = current.node.key
    output_key = ctx.flavour.output_key
    if output_key is OutputKey.UPSERT_KEY:
        return Projected(projected_key(current.node, values), values)
    if output_key is OutputKey.KEY_PSEUDO_COLUMN:
        return _key_pseudo_column(ctx, current, values, written)
    if output_key is OutputKey.NONE or not key_exprs:
        return Projected({}, values)
    return _projected_key(ctx, current, values, written, key_label, sink)


def _key_pseudo_column(ctx: Context, current: Input, values, written) -> Projected:
    """Lenses: `_key` is the result's key; a projected `expression AS _key` makes that expression
    the key of the records written (the value keeps the other columns), so a stream is re-keyed
    as it is written (its partition follows the new key). A table's rows keep their key: a new
    key per row would leave the old one's row behind."""
    key_exprs = current.node.key
    projected = next((name for name in values if name.lower() == "_key"), None)
    if projected is None:
        return Projected({"_key": key_exprs[0]} if len(key_exprs) == 1 else {}, values)
    rest = {name: e for name, e in values.items() if name != projected}  # the key facet is no value column
    if len(key_exprs) == 1 and values[projected].sql() == key_exprs[0].sql():
        return Projected({"_key": key_exprs[0]}, rest)
    if current.node.kind != Kind.STREAM:
        raise ctx.error("table-key", "this query's result is a table, whose rows keep their key: `AS _key` re-keys "
                        "a stream result only; project the expression under another name", written[projected])
    return Projected({"_key": values[projected]}, rest, key_from_columns=True)


def _projected_key(ctx: Context, current: Input, values, written, key_label, sink) -> Projected:
    bounds = set(ctx.flavour.window_columns)  # a windowed key's bounds travel with the key, unnamed
    naming, key_exprs = current.naming, [k for k in current.node.key if k.name not in bounds]
    for name, expr in values.items():
        if naming.synthetic and expr.find(exp.Column) and not is_synthetic_reference(expr, naming) and any(
                is_synthetic_reference(c, naming) for c in expr.find_all(exp.Column)):
            raise ctx.error("synthetic-key", f"{naming.synthetic} (the synthetic key) can only be projected as "
                            "it is, not inside an expression", written[name])
    wanted = [exp.Column(this=exp.to_identifier(naming.synthetic))] if naming.synthetic else list(naming.viable)
    if not naming.from_join:  # a source's, group's or PARTITION BY's key: any equal expression
        names = current.key_names or {key_exprs[0].sql()}
        wanted = [e for e in values.values() if e.sql() in names][:1]
    found = [(k, [n for n, e in values.items() if e.sql() == k.sql()]) for k in wanted]
    found = [(k, names) for k, names in found if names]
    for k, names in found if naming.every_part else found[:1]:
        if len(names) > 1:
            raise ctx.error("key-projected-twice", f"the key {_joined_name(ctx, k)} ({k.sql()}) is projected "
                            f"more than once, as {' and '.join(names)}; project it once", written[names[1]])
    if naming.every_part:
        missing = [k for k in wanted if not any(k.sql() == f.sql() for f, _ in found)]
        if missing and _key_required(ctx, sink):
            raise ctx.error("key-not-projected", f"the query writing {sink} must project every primary key column "
                            f"of {naming.owner} (the key of a foreign-key join): "
                            f"{', '.join(k.sql() for k in missing)} missing", next(iter(written.values())))
        if not missing:
            key = {names[0]: k for k, names in found}
            return Projected(key, {n: e for n, e in values.items() if n not in key})
    elif found:
        name = found[0][1][0]
        key = key_exprs[0] if naming.synthetic else found[0][0]  # the synthetic key is the join key
        return Projected({name: key}, {n: e for n, e in values.items() if n != name})
    elif naming.from_join and _key_required(ctx, sink):
        what = (f"the synthetic key {naming.synthetic} (a FULL OUTER join or a join on expressions has no key "
                "column of its own)" if naming.synthetic
                else f"its join key: one of {', '.join(k.sql() for k in wanted)}")
        raise ctx.error("key-not-projected", f"the query writing {sink} must project {what}",
                        next(iter(written.values())))
    prefix = ctx.flavour.expression_column_prefix
    if len(key_exprs) > 1:
        return Projected({f"{prefix}{i}": k for i, k in enumerate(key_exprs)}, values)
    label = key_label or (key_exprs[0].name.upper() if isinstance(key_exprs[0], exp.Column) else f"{prefix}0")
    return Projected({label: key_exprs[0]}, values)


def _key_required(ctx: Context, sink: str | None) -> bool:
    return sink is not None and ctx.option("key_must_be_projected", ctx.flavour.join_key_must_be_projected)


def _joined_name(ctx: Context, key: exp.Expr) -> str:
    """A key column as a join's `SELECT *` names it: <ALIAS>_<COLUMN>."""
    return _upper(ctx, f"{key.table}_{key.name}" if isinstance(key, exp.Column) and key.table else key.sql())
