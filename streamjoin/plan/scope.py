"""Name resolution: which relation alias provides each column, and what type it has."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from streamjoin.plan.catalog import Catalog, SourceDef
from streamjoin.dialect.errors import StreamJoinError, error_at
from streamjoin.dialect.flavours import Flavour
from streamjoin.dialect.types import SqlType, TypeSyntaxError
from streamjoin.plan.window_nodes import WindowSpec


@dataclass
class Context:
    """What every planning step needs: the text (for positioned errors), flavour and options."""

    sql: str
    file: str | None
    flavour: Flavour
    catalog: Catalog
    settings: dict = field(default_factory=dict)
    statement: exp.Expr | None = None  # the one being planned
    derived: int = 0  # derived tables planned so far: an unnamed one is read as `_subquery<n>`

    def error(self, rule: str, message: str, node: exp.Expr | None = None) -> StreamJoinError:
        """The error at `node` (at worst at the statement being planned)."""
        return error_at(message, rule, node, sql=self.sql, file=self.file, fallback=self.statement)

    def option(self, name: str, default: bool = False) -> bool:
        """`SET 'streamjoin.<name>'='true'` or the case setting of the same name, else `default`
        (the flavour's switch where the seeds disagree)."""
        value = self.settings.get(f"streamjoin.{name}", self.settings.get(name))
        return default if value is None else str(value).lower() in ("true", "1", "yes")


@dataclass(frozen=True)
class WindowedBy:
    """A relation whose rows belong to windows (a windowing table function, or a window
    aggregate over one): the window and the columns holding each row's window bounds."""

    window: WindowSpec
    start: str = "window_start"
    end: str = "window_end"


@dataclass
class ScopeEntry:
    """One relation visible in a query: its alias, columns (declared spelling -> type or None),
    kind, key columns, event-time column and the SourceDef when it is a catalog relation."""

    alias: str
    columns: dict[str, SqlType | None]
    kind: str
    key_columns: tuple[str, ...] = ()
    timestamp: str | None = None
    proctime: str | None = None
    source: SourceDef | None = None
    windowed: WindowedBy | None = None

    def column(self, name: str) -> str | None:
        lowered = name.lower()
        return next((c for c in self.columns if c.lower() == lowered), None)

    @classmethod
    def of_source(cls, alias: str, source: SourceDef, kind: str | None = None) -> "ScopeEntry":
        return cls(alias, dict(source.columns), kind or source.kind, tuple(source.key_columns),
                   source.timestamp, source.proctime, source)


def qualifier(column: exp.Column) -> str:
    return ".".join(p.name for p in (column.args.get("db"), column.args.get("table")) if p)


def col(alias: str, name: str) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name), table=exp.to_identifier(alias))


def relations(expression: exp.Expr) -> set[str]:
    """Aliases referenced by a resolved expression."""
    return {c.table for c in expression.find_all(exp.Column) if c.table}


class SelectScope:
    """The relations of one SELECT; `resolve` returns a copy of an expression with every column
    qualified by its relation's alias and spelled as declared."""

    def __init__(self, ctx: Context, entries: list[ScopeEntry] | None = None,
                 outer: "SelectScope | None" = None) -> None:
        self.ctx, self.entries = ctx, list(entries or [])
        self.using: dict[str, str] = {}  # USING/NATURAL column (lower) -> alias that provides it
        self.pseudo = {name for name, _ in ctx.flavour.pseudo_columns}
        self.synthetic_key: str | None = None  # the joins' synthetic key column, once they are planned
        self.outer = outer  # a subquery's enclosing query: names not found here are looked up there

    def add(self, entry: ScopeEntry, written: exp.Expr | None = None) -> None:
        """`written`: the relation as the query names it (where a duplicate alias is reported)."""
        if self.find(entry.alias):
            name = entry.source.name if entry.source else entry.alias
            raise self.ctx.error("duplicate-alias", f"relation alias {entry.alias!r} is used twice: give each "
                                 f"its own alias, e.g. FROM {name} a JOIN {name} b", written)
        self.entries.append(entry)

    def find(self, alias: str) -> ScopeEntry | None:
        lowered = alias.lower()
        exact = [e for e in self.entries if e.alias.lower() == lowered]
        if exact:
            return exact[0]
        by_source = [e for e in self.entries if e.source and e.source.name.lower() == lowered]
        by_suffix = [e for e in self.entries if e.alias.lower().split(".")[-1] == lowered]
        found = (by_source or by_suffix or [None])[0]
        return found if found is not None or self.outer is None else self.outer.find(alias)

    def relations_here(self) -> str:
        """The relations a column may be qualified with here, and what each reads, for errors."""
        named = [e.alias if not e.source or e.source.name == e.alias else f"{e.alias} ({e.source.name})"
                 for e in self.entries]
        return f"qualify it with one of {', '.join(named)}" if named else "no relation is in scope"

    def resolve_column(self, column: exp.Column) -> exp.Column:
        resolved = self._resolve_column(column)
        if column.this.meta_get("start") is not None:  # where it was written, for later errors
            resolved.this.meta.update({k: column.this.meta[k] for k in ("line", "col", "start", "end")})
        return resolved

    def _resolve_column(self, column: exp.Column) -> exp.Column:
        name, qual = column.name, qualifier(column)
        if qual:
            entry = self.find(qual)
            if entry is None:
                raise self.ctx.error("unknown-relation", f"unknown relation {qual!r} in {column.sql()}: "
                                     f"{self.relations_here()}", column)
            declared = entry.column(name)
            if declared is None and name.upper() in self.pseudo_of(entry):
                return col(entry.alias, name.upper())
            if declared is None:
                raise self.ctx.error("unknown-column", f"relation {entry.alias} has no column {name!r}", column)
            return col(entry.alias, declared)
        if name.lower() in self.using:
            alias = self.using[name.lower()]
            return col(alias, self.find(alias).column(name))
        matches = [e for e in self.entries if e.column(name)]
        if len(matches) == 1:
            return col(matches[0].alias, matches[0].column(name))
        pseudo = name.upper()
        if not matches and pseudo == self.synthetic_key:
            return exp.Column(this=exp.to_identifier(pseudo))  # the joins' key: see plan.keys
        if not matches and pseudo == "ROWTIME" and self.ctx.flavour.rowtime_is_output_time:
            return exp.Column(this=exp.to_identifier(pseudo))  # unqualified: the later input's rowtime
        if not matches and len(self.entries) == 1 and pseudo in self.pseudo_of(self.entries[0]):
            return col(self.entries[0].alias, pseudo)
        if not matches and pseudo in self.pseudo:
            aliases = ", ".join(e.alias for e in self.entries)
            raise self.ctx.error("ambiguous-column", f"{pseudo} is in every relation ({aliases}); qualify it", column)
        if not matches and self.outer is not None:
            return self.outer.resolve_column(column)
        if not matches:
            raise self.ctx.error("unknown-column", f"unknown column {name!r}", column)
        aliases = ", ".join(e.alias for e in matches)
        raise self.ctx.error("ambiguous-column", f"column {name!r} is ambiguous (in {aliases}); qualify it", column)

    def pseudo_of(self, entry: ScopeEntry) -> set[str]:
        """The pseudo-columns of one relation: the flavour's, and a windowed key's bounds."""
        windowed = entry.source is not None and entry.source.window is not None
        return self.pseudo | (set(self.ctx.flavour.window_columns) if windowed else set())

    def resolve(self, expression: exp.Expr) -> exp.Expr:
        if isinstance(expression, exp.Column):
            return self.resolve_column(expression)
        resolved = expression.copy()
        originals = list(expression.find_all(exp.Column))
        for original, copy in zip(originals, list(resolved.find_all(exp.Column))):
            qualified = self.resolve_column(original)
            if copy is resolved:
                return qualified
            copy.replace(qualified)
        return resolved

    def type_of(self, expression: exp.Expr) -> SqlType | None:
        """The declared type of a resolved column or CAST target; None when unknown."""
        if isinstance(expression, exp.Cast):
            try:
                return SqlType.parse(expression.to.sql())
            except TypeSyntaxError as error:
                raise self.ctx.error("cast-type", f"CAST to {expression.to.sql()}: {error}", expression.to) from None
        if isinstance(expression, exp.Column) and expression.table:
            entry = self.find(expression.table)
            return entry.columns.get(entry.column(expression.name)) if entry else None
        return None
