"""A planned query made runnable: its compiled runtime, its topics, and how Spark runs it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Callable

from sqlglot import exp

from streamjoin import plan as P
from streamjoin.compile import RuntimeFactory
from streamjoin.expr import ExprOptions
from streamjoin.formats import SerdeSpec
from streamjoin.kafka import offsets
from streamjoin.project import RunReport
from streamjoin.spark.adapter import TaskProcessor
from streamjoin.spark.query import SinkTarget, StreamingRun, TaskRouting


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


def split_repartitions(sink: P.Sink) -> list[P.Sink]:
    """The sub-topologies of a query, upstream first: every stream input re-keyed for a join
    across more than one partition is written to an internal topic `<sink>-<n>-repartition`
    (keyed by the join key, Kafka's default partitioner) by a query of its own, and the join
    reads that topic instead, co-partitioned with the other side. On one partition a re-key
    cannot move a record, so it stays inside the task (EXPLAIN still shows the node)."""
    upstream: list[P.Sink] = []

    def rewrite(node: P.PlanNode) -> P.PlanNode:
        if _needs_topic(node):
            upstream.append(_repartition_query(node, f"{sink.topic}-{len(upstream)}-repartition"))
            return _read_back(node, upstream[-1])
        changes = {name: rewrite(getattr(node, name)) for name in ("child", "left", "right")
                   if isinstance(getattr(node, name, None), P.PlanNode)}
        return replace(node, **changes) if changes else node

    main = rewrite(sink)
    return [*upstream, main]


def _needs_topic(node: P.PlanNode) -> bool:
    if not (isinstance(node, P.Repartition) and node.reason != "PARTITION BY"):
        return False
    source = node.child
    if not (isinstance(source, P.Source) and source.kind == "stream"):
        return False
    return max(source.source.partitions or 1, node.partitions or 1) > 1


def _repartition_query(node: P.Repartition, topic: str) -> P.Sink:
    source: P.Source = node.child
    columns = {name: exp.column(name, table=source.alias) for name, t in source.source.columns.items()
               if not (t is not None and t.proctime)}
    rekey = replace(node, reason="PARTITION BY")
    project = P.Project("stream", node.key, rekey, {"KEY": node.key[0]} if len(node.key) == 1 else
                        {f"KEY{i}": k for i, k in enumerate(node.key)}, columns)
    return P.Sink("stream", node.key, project, topic, topic, node.partitions or source.source.partitions)


def _read_back(node: P.Repartition, internal: P.Sink) -> P.Source:
    original: P.Source = node.child
    definition = replace(original.source, name=internal.name, topic=internal.topic, partitions=internal.partitions,
                         key_columns=(), key_format="NONE", timestamp=None)
    return P.Source("stream", node.key, original.alias, definition, original.window, original.columns)


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
    def broadcast_topics(self) -> frozenset[str]:
        """Topics every task reads whole: the referenced table of a foreign-key join. Its rows are
        partitioned by the right key, the left rows by theirs, so no partitioning brings a left
        row and the right row it references together (Kafka Streams' GlobalKTable answer)."""
        return frozenset(source.source.topic for join in walk(self.sink) if isinstance(join, P.ForeignKeyJoin)
                         for source in walk(join.right) if isinstance(source, P.Source))

    def routing(self, client_config: dict) -> TaskRouting:
        """One task per partition of the widest input topic (on the broker), so every row of a
        broadcast topic also has a task that owns, counts and dead-letters it."""
        if not self.broadcast_topics:
            return TaskRouting()
        consumer = offsets.offset_consumer(client_config)
        try:
            widest = 1 + max(tp.partition for tp in offsets.topic_partitions(consumer, list(self.input_topics)))
        finally:
            consumer.close()
        return TaskRouting(self.broadcast_topics, widest)

    @cached_property
    def sink_serde(self) -> SerdeSpec:
        """Compiling once on the driver also surfaces compile errors before Spark starts."""
        return self.factory(0).sink.serde

    def topic_partitions(self) -> dict[str, int]:
        """Every topic this sub-topology reads or writes, with its partition count."""
        counts = {n.source.topic: n.source.partitions or 1 for n in walk(self.sink) if isinstance(n, P.Source)}
        counts[self.sink.topic] = self.sink.partitions or max(counts.values(), default=1)
        return counts

    def explain_text(self) -> str:
        return P.explain(self.sink)

    def task_processor(self) -> TaskProcessor:
        return TaskProcessor(self.factory, frozenset(self.input_topics))

    def streaming_run(self, bootstrap: str, client_config: dict, checkpoint: Path,
                      end_of_input: bool = False, target: SinkTarget = SinkTarget()) -> StreamingRun:
        function = self.task_processor()
        # Named after its sink topic: unique among the queries running at once.
        return StreamingRun(self.sink.topic, self.input_topics, function, bootstrap, checkpoint, client_config,
                            target=target, end_of_input=end_of_input, routing=self.routing(client_config))

    def run(self, spark, bootstrap: str, client_config: dict, work_dir: Path, end_of_input: bool = False,
            target: SinkTarget = SinkTarget()) -> RunReport:
        checkpoint = work_dir / "checkpoints" / self.name
        run = self.streaming_run(bootstrap, client_config, checkpoint, end_of_input, target)
        return run.run(spark, RunReport(query=self.name, output_topic=self.sink.topic))


def explain_physical(queries: list[CompiledQuery]) -> str:
    """How Spark runs the sub-topologies: which topics each reads and writes, and the operators
    its per-task stateful step runs. Every join runs in that step (transformWithStateInPandas keyed
    by Kafka partition); none maps onto Spark's native joins, whose outer-row emission, grace
    and ordering differ from these semantics."""
    lines = ["Physical plan (Spark Structured Streaming):"]
    for n, query in enumerate(queries, 1):
        operators = [type(node).__name__ for node in walk(query.sink) if isinstance(node, P.Join)]
        lines.append(f"  {n}. {', '.join(query.input_topics)} -> {query.sink.topic} "
                     f"({query.topic_partitions()[query.sink.topic]} partitions, murmur2 of the key)")
        lines.append(f"     one stateful task per input partition (transformWithStateInPandas): "
                     f"{' -> '.join(operators) if operators else 're-key and project'}")
        if query.broadcast_topics:
            lines.append(f"     every task reads all partitions of {', '.join(sorted(query.broadcast_topics))} "
                         "(the foreign-key join's referenced table)")
    return "\n".join(lines)
