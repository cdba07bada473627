"""A planned sub-topology made runnable: its compiled runtime factory, its topics, its sink
serde. Pure: the Spark layer (`streamjoin.spark.query`) runs it, the local runner too."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from streamjoin import plan as P
from streamjoin.dialect.flavours import Flavour, flavour
from streamjoin.expr.compile import ExprOptions
from streamjoin.plan.rewrites import walk
from streamjoin.runtime.compiler import RuntimeFactory
from streamjoin.serde.formats import SerdeSpec


def expr_options(dialect: str | Flavour) -> ExprOptions:
    """The expression semantics of flavour `dialect` (a name or a Flavour)."""
    return ExprOptions.of(flavour(dialect))


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

    @cached_property
    def sink_serde(self) -> SerdeSpec:
        """Compiling once on the driver also surfaces compile errors before Spark starts."""
        return self.factory(0).sink.serde

    def topic_partitions(self) -> dict[str, int]:
        """Every topic this sub-topology reads or writes, with its partition count."""
        counts = {n.source.topic: n.source.partitions or 1 for n in walk(self.sink) if isinstance(n, P.Source)}
        counts[self.sink.topic] = self.sink.partitions or max(counts.values(), default=1)
        return counts
