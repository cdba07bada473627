"""Compile a planned query (`streamjoin.plan` nodes ending in a Sink) into the pipeline one task
runs (`streamjoin.runtime`): join nodes become `JoinStage`s around the operator their kind names,
expressions become closures over the stage's env (`streamjoin.expr`), sources and sink become
serde specs (`streamjoin.formats`).

A `RuntimeFactory` is what Spark ships to the workers: it compiles the pipeline there, once per
task, so nothing but the plan itself has to be pickled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from sqlglot import exp

from streamjoin import plan as P
from streamjoin.catalog import SourceDef
from streamjoin.expr import ExprOptions, Scope, compile_expr, compile_predicate
from streamjoin.formats import SerdeSpec
from streamjoin.operators.base import Side
from streamjoin.runtime.joins import build_processor
from streamjoin.runtime.stages import Env, FilterStage, JoinStage, LateralStage, Pipeline, Stage
from streamjoin.runtime.task import Entry, PipelineRuntime, SinkBinding
from streamjoin.sqltypes import SqlType, parse_type

ANY = "ANY"  # a value whose type is only known at run time: encoded as it is


@dataclass
class _Fragment:
    """A compiled subtree: its most downstream stage (None for a bare source), the source
    entries still waiting for a stage, and the relations (alias -> column types) it exposes."""

    head: Stage | None
    pending: list[tuple[str, SerdeSpec, str, bool]]  # (topic, serde, alias, is_table)
    relations: dict[str, dict[str, str | None]]


@dataclass
class _Builder:
    options: ExprOptions
    entries: dict[str, tuple[SerdeSpec, list[Entry]]] = field(default_factory=dict)
    stages: list[Stage] = field(default_factory=list)

    def scope(self, *relations: dict[str, dict]) -> Scope:
        merged: dict[str, dict] = {}
        for r in relations:
            merged.update(r)
        return Scope(merged, self.options)

    def attach(self, fragment: _Fragment, stage: Stage, port: Side) -> None:
        if fragment.head is None:
            for topic, serde, alias, is_table in fragment.pending:
                self.entries.setdefault(topic, (serde, []))[1].append(Entry(alias, stage, port, is_table))
        else:
            fragment.head.downstream, fragment.head.port = stage, port

    def add(self, stage: Stage, child: _Fragment, relations: dict) -> _Fragment:
        self.attach(child, stage, Side.LEFT)
        self.stages.append(stage)
        return _Fragment(stage, [], relations)

    def build(self, node: P.PlanNode) -> _Fragment:
        if isinstance(node, P.Source):
            return self.source(node)
        if isinstance(node, P.Repartition):  # the task already holds the re-keyed records
            return self.build(node.child)
        if isinstance(node, P.Join):
            return self.join(node)
        if isinstance(node, P.Filter):
            child = self.build(node.child)
            predicate = compile_predicate(node.predicate, self.scope(child.relations))
            return self.add(FilterStage(predicate), child, child.relations)
        if isinstance(node, P.Lateral):
            child = self.build(node.child)
            array = compile_expr(node.expression, self.scope(child.relations))
            alias = f"lateral {node.alias}"
            stage = LateralStage(array, alias, node.alias)
            return self.add(stage, child, {**child.relations, alias: {node.alias: None}})
        raise NotImplementedError(f"cannot compile {node.label} yet")

    def source(self, node: P.Source) -> _Fragment:
        source = node.source
        serde = source_serde(source)
        columns = {name: str(t.raw or t.name) if t is not None else None for name, t in source.columns.items()}
        return _Fragment(None, [(source.topic, serde, node.alias, source.kind != "stream")], {node.alias: columns})

    def join(self, node: P.Join) -> _Fragment:
        left, right = self.build(node.left), self.build(node.right)
        left_scope, right_scope = self.scope(left.relations), self.scope(right.relations)
        both = self.scope(left.relations, right.relations)
        stage = JoinStage(
            processor=build_processor(node, residual=_residual(node.residual, both), left_key_of=
                                      key_function(node.left_keys, left_scope)),
            left_key=key_function(node.left_keys, left_scope),
            right_key=key_function(node.right_keys, right_scope),
            left_aliases=tuple(left.relations),
            right_aliases=tuple(right.relations),
        )
        self.attach(left, stage, Side.LEFT)
        self.attach(right, stage, Side.RIGHT)
        self.stages.append(stage)
        return _Fragment(stage, [], {**left.relations, **right.relations})


def key_function(keys: tuple[exp.Expression, ...], scope: Scope) -> Callable[[Env], tuple | None]:
    """The join key of an env: a tuple of the key expressions; None when any part is NULL
    (a NULL never equals anything). No keys (CROSS): the one empty key."""
    parts = [compile_expr(k, scope) for k in keys]

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


def sql_type(raw: str | None) -> SqlType:
    return parse_type(raw) if raw else parse_type(ANY)


def source_serde(source: SourceDef) -> SerdeSpec:
    key = tuple((name, sql_type(source.columns[name].raw or source.columns[name].name)) for name in source.key_columns)
    value = tuple((name, sql_type(t.raw or t.name)) for name, t in source.columns.items()
                  if not source.is_key(name) and not (t.proctime))
    return SerdeSpec(source.key_format if key else "NONE", key, source.value_format, value,
                     timestamp_column=source.timestamp, record_ts_columns=tuple(source.virtual_columns))


@dataclass(frozen=True)
class RuntimeFactory:
    """Builds a task's runtime from the plan (picklable: only the plan and options travel)."""

    sink: P.Sink
    options: ExprOptions = ExprOptions()

    def __call__(self, task: int) -> PipelineRuntime:
        builder = _Builder(self.options)
        project = self.sink.child
        fragment = builder.build(project.child if isinstance(project, P.Project) else project)
        scope = builder.scope(fragment.relations)
        binding = sink_binding(self.sink, scope)
        pipeline = Pipeline(builder.stages)
        if fragment.head is None:  # no stage at all: records go straight to the sink
            for topic, serde, alias, is_table in fragment.pending:
                builder.entries.setdefault(topic, (serde, []))[1].append(Entry(alias, None, Side.LEFT, is_table))
        inputs = {topic: (serde, tuple(entries)) for topic, (serde, entries) in builder.entries.items()}
        return PipelineRuntime(inputs, pipeline, binding)


def sink_binding(sink: P.Sink, scope: Scope) -> SinkBinding:
    project = sink.child if isinstance(sink.child, P.Project) else None
    key_exprs = dict(project.key_columns) if project else {}
    value_exprs = dict(project.value_columns) if project else {}
    key_columns = tuple((name, sql_type(scope.static_type(e))) for name, e in key_exprs.items())
    value_columns = tuple((name, sql_type(scope.static_type(e))) for name, e in value_exprs.items())
    key_format = "NONE" if not key_columns else ("JSON" if len(key_columns) > 1 else sink.key_format)
    serde = SerdeSpec(key_format, key_columns, sink.value_format, value_columns)
    key_fn = key_function(tuple(key_exprs.values()), scope) if key_exprs else None
    columns = tuple((name, compile_expr(e, scope)) for name, e in value_exprs.items())
    return SinkBinding(sink.topic, serde, columns, key_fn)
