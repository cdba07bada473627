"""How Spark runs a query's sub-topologies, as text for EXPLAIN (no Spark needed to print it)."""

from __future__ import annotations

from streamjoin.plan import nodes as P
from streamjoin.plan.rewrites import walk
from streamjoin.runtime.compiled import CompiledQuery


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
