"""A planned query made runnable: its compiled runtime, its topics, and how Spark runs it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Callable

from streamjoin import plan as P
from streamjoin.compile import RuntimeFactory
from streamjoin.expr import ExprOptions
from streamjoin.formats import SerdeSpec
from streamjoin.project import RunReport
from streamjoin.spark.adapter import TaskFunction
from streamjoin.spark.query import SinkTarget, StreamingRun


def expr_options(dialect: str) -> ExprOptions:
    """Lenses writes string literals in double quotes too (`substr(name, 1) = "J"`)."""
    return ExprOptions(dialect=dialect, double_quoted_strings=dialect == "lenses")


def walk(node: P.PlanNode):
    yield node
    for child in node.children:
        if child is not None:
            yield from walk(child)


def retopic(node: P.PlanNode, rename: Callable[[str], str]) -> P.PlanNode:
    """The same plan reading and writing renamed topics (e.g. a per-run prefix)."""
    changes = {name: retopic(getattr(node, name), rename) for name in ("child", "left", "right")
               if isinstance(getattr(node, name, None), P.PlanNode)}
    if isinstance(node, P.Source):
        changes["source"] = replace(node.source, topic=rename(node.source.topic))
    if isinstance(node, P.Sink):
        changes["topic"] = rename(node.topic)
    return replace(node, **changes) if changes else node


@dataclass(frozen=True)
class CompiledQuery:
    """One persistent query: reads `input_topics`, writes `sink.topic`."""

    sink: P.Sink
    dialect: str

    @property
    def name(self) -> str:
        return self.sink.name

    @cached_property
    def factory(self) -> RuntimeFactory:
        return RuntimeFactory(self.sink, expr_options(self.dialect))

    @cached_property
    def input_topics(self) -> tuple[str, ...]:
        return tuple(sorted({n.source.topic for n in walk(self.sink) if isinstance(n, P.Source)}))

    @cached_property
    def sink_serde(self) -> SerdeSpec:
        """Compiling once on the driver also surfaces compile errors before Spark starts."""
        return self.factory(0).sink.serde

    def streaming_run(self, bootstrap: str, client_config: dict, checkpoint: Path,
                      end_of_input: bool = False, target: SinkTarget = SinkTarget()) -> StreamingRun:
        function = TaskFunction(self.factory, frozenset(self.input_topics))
        return StreamingRun(self.name, self.input_topics, function, bootstrap, checkpoint, client_config,
                            target=target, end_of_input=end_of_input)

    def run(self, spark, bootstrap: str, client_config: dict, work_dir: Path, end_of_input: bool = False,
            target: SinkTarget = SinkTarget()) -> RunReport:
        checkpoint = work_dir / "checkpoints" / self.name
        run = self.streaming_run(bootstrap, client_config, checkpoint, end_of_input, target)
        return run.run(spark, RunReport(query=self.name, output_topic=self.sink.topic))
