"""Compile a planned query (`streamjoin.plan` nodes ending in a Sink) into the pipeline one task
runs (`streamjoin.runtime`): join nodes become `JoinStage`s around the operator their kind names,
expressions become closures over the stage's env (`streamjoin.expr.compile`), sources and sink become
serde specs (`streamjoin.serde.formats`).

A `RuntimeFactory` is what Spark ships to the workers: it compiles the pipeline there, once per
task, so nothing but the plan itself has to be pickled.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from sqlglot import exp

from streamjoin import plan as P
from streamjoin.kinds import Kind
from streamjoin.dialect.formats import CHANGELOG_FORMATS, SCHEMA_FORMATS, FormatError
from streamjoin.serde.registry_codecs import Registry, configure, configured
from streamjoin.dialect.types import ANY, TIMESTAMP, SqlType, parse_type
from streamjoin.expr.aggregates import compile_aggregates
from streamjoin.expr.compile import ExprOptions, Scope, compile_expr, compile_predicate
from streamjoin.operators.base import Side
from streamjoin.plan.catalog import SourceDef
from streamjoin.runtime.joins import build_processor
from streamjoin.runtime.stages import (
    AggregateStage,
    ChangelogNormalizeStage,
    DeduplicateStage,
    Env,
    FilterStage,
    JoinStage,
    LateralStage,
    Pipeline,
    ProjectStage,
    RekeyStage,
    Stage,
)
from streamjoin.runtime.sessions import SessionAggregateStage
from streamjoin.runtime.bindings import Entry, SinkBinding
from streamjoin.runtime.task import PipelineRuntime
from streamjoin.runtime.windowed import WindowedAggregateStage
from streamjoin.runtime.windows import WindowAggregateStage, WindowAssignStage, zone_offset
from streamjoin.serde.formats import SerdeSpec
from streamjoin.serde.windowed import window_kind

TIMESTAMP_LTZ = parse_type("TIMESTAMP_LTZ(3)")

OUTPUT = "output"  # the relation the query's projection produces, read by the sink


@dataclass
class _Fragment:
    """A compiled subtree: its most downstream stage (None for a bare source), the source
    entries still waiting for a stage, and the relations it exposes (alias -> column -> type, None
    for a type only known at run time: the sink encodes it as `ANY`)."""

    head: Stage | None
    pending: list[tuple[str, SerdeSpec, Entry]]  # (topic, serde, entry without its stage yet)
    relations: dict[str, dict[str, SqlType | None]]


@dataclass
class _Builder:
    options: ExprOptions
    entries: dict[str, tuple[SerdeSpec, list[Entry]]] = field(default_factory=dict)
    stages: list[Stage] = field(default_factory=list)
    inputs_of: dict[str, dict] = field(default_factory=dict)  # projection alias -> relations below it
    broadcast: bool = False  # building the referenced side of a foreign-key join: every task reads it whole

    def scope(self, *relations: dict[str, dict]) -> Scope:
        merged: dict[str, dict] = {}
        for r in relations:
            merged.update(r)
        return Scope(merged, self.options)

    def attach(self, fragment: _Fragment, stage: Stage, port: Side) -> None:
        if fragment.head is None:
            for topic, serde, entry in fragment.pending:
                self.entries.setdefault(topic, (serde, []))[1].append(replace(entry, stage=stage, port=port))
        else:
            fragment.head.downstream, fragment.head.port = stage, port

    def add(self, stage: Stage, child: _Fragment, relations: dict) -> _Fragment:
        self.attach(child, stage, Side.LEFT)
        self.stages.append(stage)
        return _Fragment(stage, [], relations)

    def build(self, node: P.PlanNode) -> _Fragment:
        if isinstance(node, P.Source):
            return self.source(node)
        if isinstance(node, P.LookupTable):  # read by its lookup join, not from a topic
            return _Fragment(None, [], {node.alias: dict(node.columns)})
        if isinstance(node, P.Repartition):
            child = self.build(node.child)
            stage = RekeyStage(key_function(node.key, self.scope(child.relations)))
            return self.add(stage, child, child.relations)
        if isinstance(node, P.Project):
            return self.project(node)
        if isinstance(node, P.Join):
            return self.join(node)
        if isinstance(node, P.Deduplicate):
            child = self.build(node.child)
            scope = self.scope(child.relations)
            time = compile_expr(node.order_time, scope) if node.order_time is not None else None
            keyed = RekeyStage(key_function(node.key, scope))  # the rows' key: the PARTITION BY keys
            fragment = self.add(keyed, child, child.relations)
            return self.add(DeduplicateStage(node.keep_last, time), fragment, child.relations)
        if isinstance(node, P.ChangelogNormalize):
            child = self.build(node.child)
            return self.add(ChangelogNormalizeStage(), child, child.relations)
        if isinstance(node, P.Filter):
            child = self.build(node.child)
            predicate = compile_predicate(node.predicate, self.scope(child.relations))
            return self.add(FilterStage(predicate), child, child.relations)
        if isinstance(node, P.WindowAssign):
            return self.window_assign(node)
        if isinstance(node, P.Lateral):
            child = self.build(node.child)
            array = compile_expr(node.expression, self.scope(child.relations))
            # Lenses: the alias names a relation whose one column has the same name.
            stage = LateralStage(array, node.alias, node.alias)
            return self.add(stage, child, {**child.relations, node.alias: {node.alias: None}})
        raise NotImplementedError(f"cannot compile {node.label} yet")

    def project(self, node: P.Project) -> _Fragment:
        """A view's projection inside a query (its output is relation `node.alias`), or the
        query's own projection (relation OUTPUT, read by the sink). Above an Aggregate the
        projection is the aggregate's SELECT list."""
        alias = node.alias or OUTPUT
        columns = {**node.key_columns, **node.value_columns}
        if isinstance(node.child, P.Aggregate):
            child = self.build(node.child.child)
            select = [exp.alias_(e.copy(), name) for name, e in columns.items()]
            scope = self.scope(child.relations)
            window = None if isinstance(node.child, P.WindowAggregate) else node.child.window
            sessions = window is not None and window.kind == "SESSION"  # merges groups: every aggregate must merge
            plan = compile_aggregates(select, scope, list(node.child.group_by), node.child.having, merging=sessions)
            if isinstance(node.child, P.WindowAggregate):
                stage = WindowAggregateStage(plan, alias, compile_expr(node.child.window_end, scope))
            elif sessions:
                stage = SessionAggregateStage(plan, alias, window)
            elif window is not None:
                stage = WindowedAggregateStage(plan, alias, window)
            else:
                stage = AggregateStage(plan, alias)
        else:
            child = self.build(node.child)
            scope = self.scope(child.relations)
            stage = ProjectStage(alias, tuple((name, compile_expr(e, scope)) for name, e in columns.items()))
        types = {name: _static_type(e, self.scope(child.relations)) for name, e in columns.items()}
        self.inputs_of[alias] = child.relations
        return self.add(stage, child, {alias: types})

    def source(self, node: P.Source) -> _Fragment:
        source = node.source
        serde = source_serde(source)
        columns: dict[str, SqlType | None] = dict(source.columns)
        entry = Entry(node.alias, None, Side.LEFT, source.kind != Kind.STREAM, self.broadcast,
                      source.watermark_delay_ms or 0)
        return _Fragment(None, [(source.topic, serde, entry)], {node.alias: columns})

    def window_assign(self, node: P.WindowAssign) -> _Fragment:
        child = self.build(node.child)
        scope = self.scope(child.relations)
        local = zone_offset(node.time_zone) if node.time_zone else None
        stage = WindowAssignStage(node.alias, compile_expr(node.time, scope), node.window, local)
        time_type = TIMESTAMP_LTZ if node.time_zone else TIMESTAMP
        windowed = {**child.relations[node.alias], "window_start": TIMESTAMP, "window_end": TIMESTAMP,
                    "window_time": time_type}
        return self.add(stage, child, {**child.relations, node.alias: windowed})

    def join(self, node: P.Join) -> _Fragment:
        left = self.build(node.left)
        outer, self.broadcast = self.broadcast, self.broadcast or isinstance(node, P.ForeignKeyJoin)
        right = self.build(node.right)
        self.broadcast = outer
        left_scope, right_scope = self.scope(left.relations), self.scope(right.relations)
        both = self.scope(left.relations, right.relations)
        foreign_key = key_function(node.left_keys, left_scope)
        # A foreign-key join's left input stays keyed by its primary key; the FK picks the right row.
        left_keys = node.left.key if isinstance(node, P.ForeignKeyJoin) else node.left_keys
        filtering = node.join_type in P.FILTERING_JOINS  # SEMI / ANTI: the result is left rows
        window_ends = None
        if isinstance(node, P.WindowTvfJoin):
            window_ends = (compile_expr(node.left_window_end, left_scope), compile_expr(node.right_window_end, right_scope))
        stage = JoinStage(
            processor=build_processor(node, residual=_residual(node.residual, both), foreign_key=foreign_key,
                                      window_ends=window_ends),
            left_key=key_function(left_keys, left_scope),
            right_key=key_function(node.right_keys, right_scope),
            left_aliases=tuple(left.relations),
            right_aliases=() if filtering else tuple(right.relations),
        )
        self.attach(left, stage, Side.LEFT)
        self.attach(right, stage, Side.RIGHT)
        self.stages.append(stage)
        return _Fragment(stage, [], left.relations if filtering else {**left.relations, **right.relations})


def key_function(keys: tuple[exp.Expression, ...], scope: Scope) -> Callable[[Env], tuple | None]:
    """The join key of an env: a tuple of the key expressions; None when any part is NULL
    (a NULL never equals anything). No keys (CROSS): the one empty key."""
    parts = [compile_expr(k, scope) for k in keys]
    if len(parts) == 1:  # the usual join key: no generators per record
        (part,) = parts

        def single_key(env: Env) -> tuple | None:
            value = part(env)
            return None if value is None else (value,)

        single_key.part = part  # the key is (part(env),), None when that is NULL (`runtime.lookup`)
        return single_key

    def key(env: Env) -> tuple | None:
        values = tuple(part(env) for part in parts)
        return None if any(v is None for v in values) else values

    return key


def _residual(predicate: exp.Expression | None, scope: Scope):
    if predicate is None:
        return None
    test = compile_predicate(predicate, scope)

    def residual(left: Env | None, right: Env | None) -> Any:
        return test({**(left or {}), **(right or {})})

    return residual


def source_serde(source: SourceDef) -> SerdeSpec:
    """The wire layout of a source's records: key columns in the record key (unless the source
    carries them in the value), the other columns in the value; PROCTIME columns in neither;
    header columns in the record headers."""
    wire_keys = () if source.key_in_value else source.key_columns
    key = tuple((name, source.columns[name]) for name in wire_keys)
    value = tuple((name, t) for name, t in source.columns.items()
                  if name not in wire_keys and not t.proctime)
    return SerdeSpec(source.key_format if key else "NONE", key, source.value_format, value,
                     timestamp_column=source.timestamp, record_ts_columns=tuple(source.virtual_columns),
                     wrap_single_value=source.wrap_single_value, delimiter=source.value_delimiter,
                     timestamp_format=source.timestamp_format,
                     window=source.window and window_kind(source.window.kind),
                     window_size_ms=source.window and source.window.size_ms,
                     header_columns=source.header_columns, metadata_columns=source.metadata_columns,
                     wrap_single_key=source.wrap_single_key, topic=source.topic, schemas=source.schemas)


def _static_type(expression: exp.Expression, scope: Scope) -> SqlType | None:
    try:
        return scope.static_type(expression)
    except Exception:  # noqa: BLE001 - a type we cannot tell statically is typed at run time
        return None


@dataclass(frozen=True)
class RuntimeFactory:
    """Builds a task's runtime from the plan (picklable: only the plan and options travel)."""

    sink: P.Sink
    options: ExprOptions = ExprOptions()
    # The schema registry of the registry formats: the one configured in the process that ships
    # the factory to its tasks (the driver), taken when it is pickled; a task configures it before
    # building its serdes.
    registry: Registry | None = None

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["registry"] = state.get("registry") or configured()
        return state

    def __call__(self, task: int) -> PipelineRuntime:
        if self.registry is not None and configured() != self.registry:
            configure(self.registry)  # in a task's process: the serdes built below take it
        builder = _Builder(self.options)
        fragment = builder.build(self.sink.child)
        binding = sink_binding(self.sink, fragment.relations[OUTPUT], self.key_types(builder))
        if fragment.head is None:  # no stage at all: records go straight to the sink
            for topic, serde, entry in fragment.pending:
                builder.entries.setdefault(topic, (serde, []))[1].append(entry)
        inputs = {topic: (serde, tuple(entries)) for topic, (serde, entries) in builder.entries.items()}
        return PipelineRuntime(inputs, Pipeline(builder.stages), binding, task)

    def key_types(self, builder: _Builder) -> tuple[SqlType | None, ...]:
        """Types of the result key (the join, group or partition key under the projection)."""
        scope = builder.scope(builder.inputs_of[OUTPUT])
        return tuple(_static_type(k, scope) for k in self.sink.child.key)


def sink_binding(sink: P.Sink, output: dict[str, SqlType | None], key_types: tuple) -> SinkBinding:
    """The output record: key = the result's key (join key, group key or PARTITION BY key) named
    as the projection names it; value = the projected value columns."""
    if sink.value_format in CHANGELOG_FORMATS:
        raise FormatError(f"the {sink.value_format.lower()} changelog format is read, not written: write the result as "
                          "'value.format' = 'json' (a table's deletions are then tombstones)", "value")
    project: P.Project = sink.child
    names = list(project.key_columns) or (["_key"] if len(key_types) == 1 else [f"_key{i}" for i in range(len(key_types))])
    key_columns = tuple((name, ANY if t is None else t) for name, t in zip(names, key_types))
    value_columns = tuple((name, ANY if output[name] is None else output[name]) for name in project.value_columns)
    _check_stored_types(sink, key_columns, value_columns)
    # KAFKA keys hold one primitive of a known type; several columns, or an expression whose
    # type only the data tells (Lenses `customers.id - 1`), are written as JSON.
    untyped = any(t is None for t in key_types[:len(key_columns)])  # a window's bounds are not key columns
    several = len(key_columns) > 1 and sink.key_format not in SCHEMA_FORMATS  # a registry format holds a record
    key_format = "NONE" if not key_columns else ("JSON" if several or untyped else sink.key_format)
    window = sink.window
    serde = SerdeSpec(key_format, key_columns, sink.value_format, value_columns,
                      wrap_single_value=sink.wrap_single_value, wrap_single_key=sink.wrap_single_key,
                      window=window and window_kind(window.kind),
                      window_size_ms=window and window.size_ms, topic=sink.topic, register_schemas=True)
    key = _output_key(tuple(project.key_columns)) if project.key_from_columns else None
    return SinkBinding(sink.topic, serde, _output_value(tuple(project.value_columns)), key,
                       timestamp_column=sink.timestamp)


def _check_stored_types(sink: P.Sink, key_columns: tuple, value_columns: tuple) -> None:
    """Lenses STORE KEY|VALUE AS a primitive: that side is one column of the primitive's type."""
    for side, wanted, columns in (("key", sink.stored_types[0], key_columns), ("value", sink.stored_types[1], value_columns)):
        have = ", ".join(f"{name} {t.name}" for name, t in columns) or "no column"
        if wanted is not None and [t.name for _, t in columns] != [wanted]:
            raise FormatError(f"STORE {side.upper()} AS a primitive writes one {wanted} column; the {side} is {have}: "
                              f"CAST it to {wanted} or store the {side} AS JSON", side)


def _output_key(names: tuple[str, ...]) -> Callable[[Env], tuple] | None:
    if not names:
        return None

    def key(env: Env) -> tuple:
        return tuple(env[OUTPUT][name] for name in names)

    return key


def _output_value(names: tuple[str, ...]) -> Callable[[Env], dict[str, Any]]:
    def value(env: Env) -> dict[str, Any]:
        return {name: env[OUTPUT][name] for name in names}

    # the value is these columns of the projection's row: a caller holding that row may encode it
    # as it is (the writers read columns by name; `runtime.lookup`)
    value.picks = (OUTPUT, names)
    return value
