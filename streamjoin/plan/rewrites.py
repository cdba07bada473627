"""Pure rewrites of a planned query: walking it, renaming its topics, and cutting it into
sub-topologies at the repartition topics Kafka Streams would create."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

from sqlglot import exp

from streamjoin.kinds import Kind
from streamjoin.plan import nodes as P
from streamjoin.plan.catalog import SourceDef


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


def redefine_sources(node: P.PlanNode, change: Callable[[SourceDef], SourceDef]) -> P.PlanNode:
    """The same plan with every Source's definition (and the columns it reads) passed through
    `change`."""
    changes = {name: redefine_sources(getattr(node, name), change) for name in ("child", "left", "right")
               if isinstance(getattr(node, name, None), P.PlanNode)}
    if isinstance(node, P.Source):
        changes["source"] = change(node.source)
        changes["columns"] = dict(changes["source"].columns)
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
    if not (isinstance(source, P.Source) and source.kind == Kind.STREAM):
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
    # The internal topic's value holds every column, header columns included (as read upstream).
    definition = replace(original.source, name=internal.name, topic=internal.topic, partitions=internal.partitions,
                         key_columns=(), key_format="NONE", timestamp=None, header_columns=())
    return P.Source("stream", node.key, original.alias, definition, original.window, original.columns)
