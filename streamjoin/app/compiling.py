"""A planned program made runnable, and checked: every query is cut into its sub-topologies and
each is compiled once, here, as a Spark task would compile it. What would otherwise fail only
when the query starts (an unknown function, a CAST to no type, a result the sink's format
cannot hold) fails now, as a positioned error at the text that causes it."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from sqlglot import exp

from streamjoin.dialect.depth import NESTING_HINT, recursion_headroom
from streamjoin.dialect.errors import StreamJoinError, error_at
from streamjoin.dialect.formats import FormatError
from streamjoin.expr import ExpressionError
from streamjoin.plan import PlannedQuery, Program
from streamjoin.plan.catalog import SourceDef
from streamjoin.plan.ddl import Properties
from streamjoin.plan.rewrites import redefine_sources, retopic, split_repartitions
from streamjoin.runtime.compiled import CompiledQuery
from streamjoin.serde.formats import SerdeSpec


def compile_program(program: Program, rename: Callable[[str], str] | None = None) -> list[CompiledQuery]:
    """The program's queries as sub-topologies, upstream (repartitions) first, each compiled.
    `rename` maps every topic name (a test run's prefix)."""
    compiled: list[CompiledQuery] = []
    written: dict[str, SerdeSpec] = {}  # topic -> how an earlier query of the program writes it
    for query in program.queries:
        root = retopic(query.root, rename) if rename else query.root
        # The planner cannot type what an earlier query writes; its compiled sink can.
        root = redefine_sources(root, lambda source: _as_written(source, written.get(source.topic)))
        for sub in split_repartitions(root):
            compiled.append(_compiled(program, query, CompiledQuery(sub, program.flavour.name)))
            written[sub.topic] = compiled[-1].sink_serde
    return compiled


def _as_written(source: SourceDef, serde: SerdeSpec | None) -> SourceDef:
    if serde is None:
        return source
    return replace(source, columns=dict(serde.key_columns + serde.value_columns), key_format=serde.key_format,
                   value_format=serde.value_format, key_columns=tuple(name for name, _ in serde.key_columns))


def _format_written(program: Program, query: PlannedQuery, side: str) -> exp.Expr | None:
    """Where the statement names `side`'s format: a WITH property, or Lenses' STORE clause."""
    stored = query.statement.args.get("stored") if query.statement is not None else None
    if stored:
        return stored.args.get(side) or stored
    return Properties.of(query.statement).written(*Properties.format_names(program.flavour, side))


def _compiled(program: Program, query: PlannedQuery, compiled: CompiledQuery) -> CompiledQuery:
    def error(rule: str, message: str, node: exp.Expr | None) -> StreamJoinError:
        return error_at(message, rule, node, sql=program.text, file=program.file, fallback=query.statement)

    with recursion_headroom():
        try:
            compiled.sink_serde  # builds task 0's whole pipeline: every expression and serde
        except ExpressionError as failure:
            raise error(failure.rule, failure.reason, failure.node) from None
        except FormatError as failure:
            raise error("format", str(failure), _format_written(program, query, failure.side)) from None
        except RecursionError:
            raise error("too-deeply-nested", f"the query nests {NESTING_HINT}", None) from None
        except Exception as failure:  # noqa: BLE001 - even an engine gap is reported at its statement
            raise error("compile", f"cannot compile this query ({type(failure).__name__}: {failure})", None) from None
    return compiled
