"""`streamjoin run-cases`: conformance cases through the real path.

For each case: plan its SQL (a rejected statement passes when the case expects that error),
create its topics on the broker under a per-case prefix, produce the inputs in arrival order
with their timestamps (in as few segments as the order needs, see `arrival`), run every
compiled query with Spark after each segment (availableNow; the last run ends the input when
the case says `flush_at_end`), read every sink topic back and compare with `expected`. A case
whose outputs were read leaves no topics or checkpoints behind; one that errs keeps them.
"""

from __future__ import annotations

import itertools
import uuid
import shutil
import tempfile
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from typing import Iterable, Iterator

from streamjoin.runner.cases import Case
from streamjoin.settings import KafkaSource, Settings
from streamjoin.kafka.client import kafka_client_config, spark_options
from streamjoin.kafka import admin, offsets
from streamjoin.runner.arrival import Arrival, arrival_segments
from streamjoin.runner.compare import compare
from streamjoin.kafka.records import ConsumedRecord, place
from streamjoin.runner.wire import decode_output, misplaced
from streamjoin.runner.planned import PlannedCase, plan_case
from streamjoin.runner.registry_cases import CaseRegistry, source_problems
from streamjoin.spark.query import run_available
from streamjoin.spark.sources import source_on_brokers


@dataclass
class CaseResult:
    case_id: str
    status: str  # PASS | FAIL | ERROR
    reason: str = ""

    def line(self) -> str:
        return f"{self.status} {self.case_id}" + (f": {self.reason}" if self.reason else "")


class Runner:
    """Runs one case: plan it (a rejection is the verdict of a case that expects one), get the
    records its queries write (`outputs`, the subclass's way), compare them with `expected`."""

    case_registry: CaseRegistry | None = None  # the schema registry of cases that need one

    def run(self, case: Case) -> CaseResult:
        prefix = self.topic_prefix()
        if case.needs_registry and self.case_registry is not None:
            prefix = prefix or f"case-{uuid.uuid4().hex[:8]}."  # its own subjects, also when run locally
            try:
                with self.case_registry.case(case, prefix):
                    return self._run(case, prefix)
            except Exception as error:  # noqa: BLE001 - the registry's set-up or clean-up, reported per case
                return CaseResult(case.id, "ERROR", f"{type(error).__name__}: {error}".splitlines()[0][:500])
        return self._run(case, prefix)

    def _run(self, case: Case, prefix: str) -> CaseResult:
        try:
            planned = plan_case(case, topic_prefix=prefix)
        except Exception as error:  # noqa: BLE001 - any rejection is the case's verdict
            return rejected_verdict(case, error)
        if case.expect_error is not None:
            return CaseResult(case.id, "FAIL", "the statement was accepted; expected an error containing "
                              + ", ".join(repr(s) for s in case.expect_error.contains))
        try:
            return verdict(case, planned, self.outputs(case, planned, prefix))
        except Exception as error:  # noqa: BLE001 - reported per case, the run goes on
            return CaseResult(case.id, "ERROR", f"{type(error).__name__}: {error}".splitlines()[0][:500])

    def topic_prefix(self) -> str:
        return ""

    def run_all(self, cases: list[Case], parallel: int = 1) -> Iterator[CaseResult]:
        """Results in case order. Cases are independent (own topics and checkpoints), so several
        can run at once on the one SparkSession: a case spends most of its time waiting on
        query start-up and broker round trips, not on the two cores."""
        if parallel <= 1:
            yield from map(self.run, cases)
            return
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            yield from pool.map(self.run, cases)

    def close(self) -> None:
        """Release what the runner holds (nothing by default)."""

    def outputs(self, case: Case, planned: PlannedCase, prefix: str) -> dict[str, list[ConsumedRecord]]:
        """The records on every sink topic after the case's inputs went through its queries."""
        raise NotImplementedError


def rejected_verdict(case: Case, error: Exception) -> CaseResult:
    if case.expect_error is None:
        return CaseResult(case.id, "ERROR", f"rejected: {str(error).splitlines()[0][:500]}")
    missing = case.expect_error.missing(error)
    if missing:
        return CaseResult(case.id, "FAIL", f"error lacks {missing}: {str(error).splitlines()[0][:300]}")
    return CaseResult(case.id, "PASS")


def verdict(case: Case, planned: PlannedCase, consumed: dict[str, list[ConsumedRecord]]) -> CaseResult:
    reasons = []
    for topic, expected in planned.expected_by_topic(case.expected).items():
        actual = decode_output(consumed.get(topic, []), planned.sink_serde(topic))
        reason = compare(expected, actual, case.compare == "ordered")
        if reason:
            reasons.append(reason if len(planned.sink_topics) == 1 else f"{topic}: {reason}")
        if case.expected_partitioning == "murmur2":
            reasons.extend(misplaced(consumed.get(topic, []), planned.topic_partitions[topic]))
    reasons.extend(source_problems(case, planned))
    if case.expected_schema is not None:
        want = [k.lower() for k in case.expected_schema.get("key", [])]
        got = [k.lower() for k in planned.output_key_names]
        if want != got:
            reasons.append(f"result key columns {got}, expected {want}")
    return CaseResult(case.id, "FAIL", "; ".join(reasons)) if reasons else CaseResult(case.id, "PASS")


@dataclass
class CaseRunner(Runner):
    """Runs cases on one broker and one SparkSession, the real path."""

    spark: object
    bootstrap: str
    settings: Settings = field(default_factory=Settings.from_env)
    work_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="streamjoin-cases-")))
    _ids: Iterable[int] = field(default_factory=lambda: itertools.count(1))
    # Topics outlive a run on a long-lived broker: every run gets its own topic namespace.
    _run_token: str = field(default_factory=lambda: uuid.uuid4().hex[:8])

    def topic_prefix(self) -> str:
        return f"sj-{self._run_token}-{next(self._ids):04d}."

    @cached_property
    def source(self) -> KafkaSource:
        """What the cases' queries read with: the settings' source, on these brokers."""
        with offsets.OffsetClient(kafka_client_config(self.settings, self.bootstrap)) as client:
            return source_on_brokers(self.settings.kafka_source, client.is_tansu())

    def outputs(self, case: Case, planned: PlannedCase, prefix: str) -> dict[str, list[ConsumedRecord]]:
        work = self.work_dir / prefix.rstrip(".")
        admin.create_topics(self.bootstrap, planned.topic_partitions, settings=self.settings)
        placed = [place(*planned.input_target(record), sequence=i, headers=record.header_pairs,
                        window=record.window_bounds) for i, record in enumerate(case.inputs)]
        arrivals = [Arrival(i, p.partition, (p.topic, p.partition), p.record.timestamp_ms)
                    for i, p in enumerate(placed)]
        segments = arrival_segments(arrivals) or [[]]
        for n, segment in enumerate(segments):
            for topic, group in itertools.groupby((placed[a.index] for a in segment), key=lambda p: p.topic):
                admin.produce(self.bootstrap, topic, [p.record for p in group], settings=self.settings)
            last = n == len(segments) - 1
            for query in planned.queries:
                run_available(self.spark, query, spark_options(self.settings, self.bootstrap),
                              kafka_client_config(self.settings, self.bootstrap),
                              work / "checkpoints" / query.name,
                              end_of_input=last and bool(case.settings.get("flush_at_end")),
                              source=self.source)
        consumed = {topic: admin.read_all(self.bootstrap, topic, settings=self.settings)
                    for topic in planned.expected_by_topic(case.expected)}
        self._discard(prefix, work)
        return consumed

    def _discard(self, prefix: str, work: Path) -> None:
        """Delete a case's topics (its inputs, sinks and any its queries made) and checkpoints once
        its outputs are read; a case that errs keeps them to be looked at. On a long-lived broker
        the topics of every run piled up, and every Kafka client's start fetches all topics."""
        ours = [topic for topic in admin.list_topics(self.bootstrap, self.settings) if topic.startswith(prefix)]
        admin.delete_topics(self.bootstrap, ours, settings=self.settings)
        shutil.rmtree(work, ignore_errors=True)

    def close(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)
