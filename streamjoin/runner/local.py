"""Run a planned case through the compiled runtime in this process: the same decode, operators,
projection and encode as the Spark path, minus Spark and the broker. For fast tests and for
debugging a query (`run-cases --local`); the conformance verdict comes from the real path."""

from __future__ import annotations

from collections import defaultdict

from streamjoin.runner.cases import Case
from streamjoin.kafka.murmur2 import choose_partition
from streamjoin.kafka.records import ConsumedRecord
from streamjoin.runner.compare import OutputRecord
from streamjoin.runner.planned import PlannedCase
from streamjoin.runner.run import Runner
from streamjoin.kafka.records import place
from streamjoin.runner.wire import decode_output
from streamjoin.runtime.contract import Emitted, InputRow


def run_locally(case: Case, planned: PlannedCase) -> dict[str, list[OutputRecord]]:
    """Decoded outputs per sink topic (see `local_records`)."""
    topics = local_records(case, planned)
    return {topic: decode_output(topics[topic], planned.sink_serde(topic)) for topic in planned.sink_topics}


class LocalCaseRunner(Runner):
    """`run-cases --local`: every case through the compiled runtime in this process, no broker
    and no Spark (seconds for a suite); the verdict that counts comes from the real path."""

    def outputs(self, case: Case, planned: PlannedCase, prefix: str) -> dict[str, list[ConsumedRecord]]:
        return local_records(case, planned)


def local_records(case: Case, planned: PlannedCase) -> dict[str, list[ConsumedRecord]]:
    """The records of every topic after the case's inputs went through its queries. Inputs are
    processed in arrival order, one task per partition (a broadcast topic's records reach every
    task, as on Spark: `CompiledQuery.broadcast_topics`); sub-topologies run one after the other,
    each over everything its upstream wrote."""
    topics: dict[str, list[ConsumedRecord]] = defaultdict(list)
    for i, record in enumerate(case.inputs):
        p = place(*planned.input_target(record), sequence=i, headers=record.header_pairs, window=record.window_bounds)
        _append(topics, p.topic, p.partition, p.record.key, p.record.value, p.record.timestamp_ms, p.record.headers)
    flush = bool(case.settings.get("flush_at_end"))
    for query in planned.queries:
        runtimes = {}
        every_task = range(max(planned.topic_partitions[t] for t in query.input_topics))
        arrivals = sorted((r for t in query.input_topics for r in topics[t]), key=lambda r: r.timestamp_type)
        for r in arrivals:
            for task in every_task if r.topic in query.broadcast_topics else (r.partition,):
                runtime = runtimes.setdefault(task, query.factory(task))
                outputs = runtime.process(InputRow(r.topic, r.partition, r.offset, r.timestamp_ms, r.key, r.value,
                                                   tuple(r.headers)))
                _emit(topics, outputs, planned.topic_partitions)
        if flush:
            for runtime in runtimes.values():
                _emit(topics, runtime.end_of_input(), planned.topic_partitions)
    return topics


def _emit(topics, outputs, partitions: dict[str, int]) -> None:
    for e in (o for o in outputs if isinstance(o, Emitted)):  # rejections: the Spark path dead-letters them
        partition = choose_partition(e.key, partitions[e.topic], len(topics[e.topic]))
        _append(topics, e.topic, partition, e.key, e.value, e.ts, e.headers)


def _append(topics, topic: str, partition: int, key, value, ts: int, headers=()) -> None:
    # timestamp_type carries the global arrival sequence, so a query replays arrival order.
    sequence = sum(len(v) for v in topics.values())
    offset = sum(1 for r in topics[topic] if r.partition == partition)
    topics[topic].append(ConsumedRecord(topic, partition, offset, key, value, ts, sequence, tuple(headers)))
