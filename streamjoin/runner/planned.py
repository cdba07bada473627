"""A conformance case planned and compiled, with its topics renamed under a per-case prefix so
that cases sharing topic names never see each other's records."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from streamjoin.runner.cases import Case, ExpectedRecord, InputRecord
from streamjoin.plan.catalog import Catalog
from streamjoin.runtime.compiler import source_serde
from streamjoin.serde.formats import SerdeSpec
from streamjoin.plan import plan_program
from streamjoin.plan import nodes as P
from streamjoin.plan.rewrites import walk
from streamjoin.runtime.compiled import CompiledQuery
from streamjoin.app.compiling import compile_program


def case_catalog(case: Case) -> Catalog:
    """The case's inputs: its `sources`, or the catalog its `setup` statements declare."""
    catalog = Catalog.from_case_sources(case.sources)
    if case.setup:
        catalog = plan_program(";\n".join(s.rstrip().rstrip(";") for s in case.setup) + ";",
                               catalog, case.dialect).catalog
    return catalog


@dataclass
class PlannedCase:
    queries: list[CompiledQuery]
    catalog: Catalog
    prefix: str
    topic_partitions: dict[str, int]
    output_key_names: tuple[str, ...]
    _serdes: dict[str, SerdeSpec] = field(default_factory=dict)

    @property
    def sink_topics(self) -> list[str]:
        return [q.sink.topic for q in self.queries]

    def input_target(self, record: InputRecord) -> tuple[str, int, SerdeSpec, Any, Any, int]:
        """(topic, partitions, serde, key, value, ts) for `place` (its window: `record.window_bounds`)."""
        source = self.catalog.get(record.source) if record.source else self.catalog.by_topic(record.topic)
        if source is None:
            raise ValueError(f"input for unknown {'source ' + record.source if record.source else 'topic ' + record.topic}")
        topic = self.prefix + source.topic
        serde = self._serdes.get(topic) or self._serdes.setdefault(  # one codec per topic (registry schemas)
            topic, source_serde(replace(source, topic=topic)))  # its subjects are the prefixed topic's
        return topic, self.topic_partitions[topic], serde, record.key, record.value, record.ts or 0

    def sink_serde(self, topic: str) -> SerdeSpec:
        return next(q.sink_serde for q in self.queries if q.sink.topic == topic)

    def expected_by_topic(self, expected: tuple[ExpectedRecord, ...]) -> dict[str, list[ExpectedRecord]]:
        """Expected records per (prefixed) sink topic; those naming no topic belong to the last
        query's sink. Every sink named (or the last one) is compared, even when nothing is expected."""
        default = self.sink_topics[-1]
        grouped: dict[str, list[ExpectedRecord]] = {default: []} if not any(e.has_topic for e in expected) else {}
        for record in expected:
            topic = self.prefix + record.topic if record.has_topic and record.topic else default
            grouped.setdefault(topic, []).append(record)
        return grouped


def plan_case(case: Case, topic_prefix: str) -> PlannedCase:
    catalog = case_catalog(case)
    program = plan_program(case.sql, catalog, case.dialect, settings=case.settings)
    if not program.queries:
        raise ValueError("the case's sql holds no query")
    # compiled now: errors belong to the statement, before any input
    queries = compile_program(program, rename=lambda topic: topic_prefix + topic)
    partitions = _partitions(queries, program.catalog, case.settings, topic_prefix)
    return PlannedCase(queries, program.catalog, topic_prefix, partitions, program.queries[-1].key_columns)


def _partitions(queries: list[CompiledQuery], catalog: Catalog, settings: dict, prefix: str) -> dict[str, int]:
    """Partition counts of every topic: declared for sources; for sinks WITH (PARTITIONS=n),
    else `settings.output_partitions`, else the largest input's (ksqlDB's default)."""
    # a database table (Flink 'connector' = 'jdbc') has no topic
    counts: dict[str, int] = {prefix + s.topic: s.partitions or 1 for s in catalog if s.lookup is None}
    for query in queries:
        for node in walk(query.sink):
            if isinstance(node, P.Source):
                counts[node.source.topic] = node.source.partitions or 1
        inputs = [counts[t] for t in query.input_topics]
        counts[query.sink.topic] = (query.sink.partitions or settings.get("output_partitions")
                                    or max(inputs, default=1))
    return counts
