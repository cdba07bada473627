"""Running a project's queries for real: topics, checkpoints, the Delta copy, dead letters, lag.

`Engine(settings, spark)` is what an orchestrator (the Dagster layer), the CLI and the demo call.
It runs the `Query` it is given as that query was compiled when it was loaded. State lives under
`settings.home`: `checkpoints/<query>/<sub-topology>` (Spark offsets + task state); the output
tables under `settings.delta_root`: `<query>` and `<query>-dead-letters`.
"""

from __future__ import annotations

import functools
import json
import shutil
import time
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Callable


from streamjoin.app import identity
from streamjoin.registry import service as registry_service
from streamjoin.app.outputs import DeltaOutput, dead_letters
from streamjoin.app.project import Query
from streamjoin.app.startup import starting_offsets
from streamjoin.kafka import admin, offsets
from streamjoin.kafka.offsets import DataLossError, TopicPartition  # noqa: F401 - DataLossError: what a run raises
from streamjoin.kafka.client import KafkaUnreachable, check_reachable, kafka_client_config, spark_options
from streamjoin.kafka.embedded import ensure_bootstrap
from streamjoin.kafka_properties import with_properties
from streamjoin.kinds import RUN_MODES, DataLossPolicy, RunMode
from streamjoin.plan import nodes as P
from streamjoin.plan.client_properties import query_bootstrap, query_client_properties
from streamjoin.plan.rewrites import walk
from streamjoin.runtime.report import RunReport  # what a run returns, for the callers of this facade
from streamjoin.settings import Settings

MODES = RUN_MODES
ON_DATA_LOSS = offsets.ON_DATA_LOSS  # fail | earliest | latest: see Engine.run
# Asking the brokers again after Spark's Kafka connector timed out: a broker that is there answers
# a metadata request at once; one that is not has already had the whole timeout.
RECHECK_S = 1.0


def _on_its_cluster(method):
    """`method` run by the engine of the query's Kafka cluster (`Engine.on_cluster`)."""
    @functools.wraps(method)
    def on_cluster(self, query, *args, **kwargs):
        return method(self.on_cluster(query), query, *args, **kwargs)
    return on_cluster


class Engine:
    """The engine for one set of settings. `spark` is a session or a function returning one
    (created on first need: lag, reset and co-partitioning need no Spark); by default the
    engine's own session (`streamjoin.spark.session.get_spark`). The Spark layer is imported
    where it is needed, so loading a project and asking for lag never import pyspark."""

    def __init__(self, settings: Settings | None = None, spark=None) -> None:
        self.settings = settings or Settings.from_env()
        self._spark = spark
        registry_service.configure_from(self.settings)  # the registry formats' (docs/formats.md)

    @property
    def spark(self):
        if self._spark is None:
            from streamjoin.spark.session import get_spark
            self._spark = get_spark(self.settings)
        elif callable(self._spark):
            self._spark = self._spark()
        return self._spark

    @cached_property
    def bootstrap(self) -> str:
        """The configured servers, else the embedded broker's (started if needed)."""
        return ensure_bootstrap(self.settings)

    @property
    def client_config(self) -> dict:
        return kafka_client_config(self.settings, self.bootstrap)

    def kafka_options(self, on_data_loss: str | None = None) -> dict[str, str]:
        return {**spark_options(self.settings, self.bootstrap),
                "streamjoin.onDataLoss": on_data_loss or self.settings.on_data_loss}

    def on_cluster(self, query: Query) -> "Engine":
        """This engine, or, when the query's tables name another Kafka cluster
        (`'properties.bootstrap.servers'`) or give client properties (`'properties.*'`), one on
        that cluster with those properties (they win over the settings') sharing this one's Spark."""
        servers = next((b for sub in query.compiled if (b := query_bootstrap(sub.sink))), None)
        properties = query_client_properties(sub.sink for sub in query.compiled)
        if (servers is None or servers == self.bootstrap) and not properties:
            return self
        settings = replace(self.settings, kafka_bootstrap=servers or self.bootstrap)
        return Engine(with_properties(settings, properties), lambda: self.spark)

    def _source_options(self, query: Query, sub, policy: str) -> dict[str, str]:
        """The Spark source options of `sub`; before its checkpoint holds offsets, where each input
        starts, as its table's 'scan.startup.mode' says (app.startup)."""
        options = self.kafka_options(policy)
        if not _checkpoint_offsets(self.checkpoint_root(query) / sub.name):
            options["startingOffsets"] = starting_offsets(sub, self.client_config)
        return options

    def _connect(self, wait_s: float | None = None) -> None:
        """One quick metadata request first, so a broker outage is one line naming the servers
        (KafkaUnreachable) rather than a timeout deep inside a Spark query. `wait_s`: how long to
        wait for an answer (default the timeout; less when a client already waited it out)."""
        settings = self.settings if wait_s is None else replace(self.settings, kafka_timeout_s=wait_s)
        try:
            check_reachable(settings, self.bootstrap)
        except KafkaUnreachable:
            raise KafkaUnreachable(self.bootstrap, self.settings.kafka_timeout_s) from None

    def delta_path(self, query: Query) -> str:
        return str(self.settings.delta_root / query.name)

    def dead_letter_path(self, query: Query) -> str:
        return self.delta_path(query) + "-dead-letters"

    def dead_letter_topic(self, query: Query) -> str:
        return f"{query.name}-dead-letters"

    def checkpoint_root(self, query: Query) -> Path:
        return self.settings.home / "checkpoints" / query.name

    def ensure_topics(self, query: Query) -> None:
        """Create every topic the query reads or writes that does not exist yet (declared counts)."""
        wanted = {topic: n for sub in query.compiled for topic, n in sub.topic_partitions().items()}
        wanted[self.dead_letter_topic(query)] = 1
        admin.create_topics(self.bootstrap, wanted, settings=self.settings)

    def finish_trigger(self, stream) -> bool:
        """Waits for a running Spark stream's trigger under way to finish (False: still running at
        the drain timeout), so a stop between triggers never interrupts a batch."""
        from streamjoin.spark.query import finish_trigger
        return finish_trigger(stream)

    @_on_its_cluster
    def run(self, query: Query, mode: RunMode | None = None, stop_after_s: float | None = None,
            on_progress: Callable[[RunReport], None] | None = None,
            on_data_loss: DataLossPolicy | None = None) -> RunReport:
        """`_run` (below); a query that failed because its brokers went away says that in one
        line naming them (KafkaUnreachable, after asking them once more within the timeout, or
        within RECHECK_S when Spark's Kafka connector already waited it out: a broker that is
        there answers at once), whichever client noticed first and however Spark reported it."""
        from streamjoin.spark.query import QueryFailed

        try:
            return self._run(query, mode, stop_after_s, on_progress, on_data_loss)
        except QueryFailed as failed:
            if failed.raised(KafkaUnreachable):  # a task already waited the timeout out
                raise KafkaUnreachable(self.bootstrap, self.settings.kafka_timeout_s) from None
            self._connect(min(RECHECK_S, self.settings.kafka_timeout_s) if failed.java_client_timed_out() else None)
            raise

    def _run(self, query: Query, mode: RunMode | None = None, stop_after_s: float | None = None,
             on_progress: Callable[[RunReport], None] | None = None,
             on_data_loss: DataLossPolicy | None = None) -> RunReport:
        """Run the query from its checkpoint: `available_now` processes everything new then stops;
        `continuous` runs with a processing-time trigger until `stop_after_s` (or until stopped),
        calling `on_progress(report)` after each batch. `on_data_loss` (default: the settings')
        says what to do when the checkpoint points outside a topic's log: fail, or go on from the
        log's earliest or latest offset."""
        from streamjoin.kafka.transactions import output_guarantee
        from streamjoin.spark.query import SinkTarget, replay_writer_id, streaming_run
        from streamjoin.spark.sources import source_on_brokers

        mode = mode or query.mode
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        policy = on_data_loss or self.settings.on_data_loss
        if policy not in offsets.ON_DATA_LOSS:
            raise ValueError(f"on_data_loss must be one of {offsets.ON_DATA_LOSS}, got {policy!r}")
        self._connect()
        self.ensure_topics(query)
        tansu = self.brokers_are_tansu(query)
        exactly_once = output_guarantee(tansu).exactly_once
        source = source_on_brokers(self.settings.kafka_source, tansu)
        self._check_identity(query, policy)  # raises DataLossError for topics that are not those read
        if policy == "fail":
            self._read_positions(query)  # raises DataLossError before any Spark query starts
        delta_path = self.delta_path(query)
        report = RunReport(query=query.name, output_topic=query.output_topic, delta_path=delta_path)
        rejected = dead_letters(query.name, self.dead_letter_topic(query), self.dead_letter_path(query))
        for sub in query.compiled:
            is_main = sub is query.compiled[-1]
            lifetime = replay_writer_id(sub.name, self.checkpoint_root(query) / sub.name)
            target = SinkTarget(table=DeltaOutput(sub, delta_path, lifetime) if is_main else None, dead_letters=rejected)
            run = streaming_run(sub, self._source_options(query, sub, policy), self.client_config,
                                self.checkpoint_root(query) / sub.name, target=target,
                                transactions=query.name if exactly_once else None,
                                source=source)
            if is_main and mode == "continuous":
                run.run_continuous(self.spark, report, stop_after_s=stop_after_s, on_progress=on_progress,
                                   interval_ms=self.settings.trigger_interval_ms)
            else:
                sub_report = run.run(self.spark, RunReport(query=sub.name))
                if is_main:
                    report = _merge(report, sub_report)
                else:  # a repartition step: only its dead letters belong to the query's figures
                    report.dead_letters += sub_report.dead_letters
        report.consumer_lag = self.consumer_lag(query)
        return report

    @_on_its_cluster
    def output_guarantee(self, query: Query):
        """What the query's Kafka output promises on its brokers (`kafka.transactions.OutputGuarantee`):
        exactly-once (its tasks write in transactions) unless they are Tansu; `output_notice` says
        it in a line. Asked of the query's own cluster (its tables may name another one)."""
        from streamjoin.kafka.transactions import output_guarantee  # librdkafka's producer side: runs only

        return output_guarantee(self.brokers_are_tansu(query))

    @_on_its_cluster
    def brokers_are_tansu(self, query: Query) -> bool:
        """Whether the query's own brokers are Tansu: its transactions are not exactly-once, and
        Spark's Kafka connector would miss records there (`spark.sources`)."""
        topic = next((t for sub in query.compiled for t in sub.input_topics), query.output_topic)
        with offsets.OffsetClient(self.client_config) as client:  # asked about one topic, not all
            return client.is_tansu(topic)

    def output_notice(self, query: Query) -> str:
        """The line a run says at its start about its Kafka output (how to read it)."""
        from streamjoin.kafka.transactions import guarantee_notice

        return guarantee_notice(self.output_guarantee(query), query.name)

    @_on_its_cluster
    def consumer_lag(self, query: Query) -> int:
        """Records on the query's input topics not yet in its checkpoint (all sub-topologies).
        Never clamped: a checkpoint that points outside a log raises DataLossError."""
        self._connect()
        return sum(end - position for sub_positions in self._read_positions(query)
                   for position, end in sub_positions.values())

    @_on_its_cluster
    def partition_positions(self, query: Query) -> dict[TopicPartition, tuple[int, int]]:
        """{input partition: (next offset to read, log end)} over all sub-topologies: the lag
        per partition (`consumer_lag` is its sum); raises DataLossError as that does."""
        self._connect()
        return {tp: pair for sub_positions in self._read_positions(query) for tp, pair in sub_positions.items()}

    def _read_positions(self, query: Query) -> list[dict[TopicPartition, tuple[int, int]]]:
        """Per sub-topology, {partition: (next offset to read, log end)} of its inputs; raises
        DataLossError for a checkpointed offset outside the log (a partition not in the
        checkpoint yet starts at the log's beginning)."""
        result = []
        for sub in query.compiled:
            begins, ends = admin.log_ranges(self.bootstrap, list(sub.input_topics), settings=self.settings)
            committed = {TopicPartition(topic, int(p)): offset
                         for topic, by_partition in _checkpoint_offsets(self.checkpoint_root(query) / sub.name).items()
                         for p, offset in by_partition.items()}
            positions = offsets.recover({**begins, **{tp: o for tp, o in committed.items() if tp in ends}},
                                        begins, ends, "fail")
            result.append({tp: (positions[tp], ends[tp]) for tp in ends})
        return result

    def _check_identity(self, query: Query, policy: str) -> None:
        """Per sub-topology, the identity of the data its checkpoint read against the broker's now
        (`identity.check`: refused, or restarted as `policy` says)."""
        for sub in query.compiled:
            topics = list(sub.input_topics)
            begins, ends = admin.log_ranges(self.bootstrap, topics, settings=self.settings)
            identity.check(self.checkpoint_root(query) / sub.name, identity.current(self.client_config, topics),
                           policy, begins, ends)

    @_on_its_cluster
    def reset(self, query: Query) -> None:
        """Start the query over: delete its checkpoint and everything it wrote — the Delta table
        and dead-letter table, the output, dead-letter and repartition topics (the next run
        creates them again). Kept, the topics would hold every result twice after the rerun and
        the Delta writes of the restarted batch ids would be skipped as done. A query reading
        the output topic then finds its checkpoint past the new log (state `data loss`)."""
        shutil.rmtree(self.checkpoint_root(query), ignore_errors=True)
        for path in (self.delta_path(query), self.dead_letter_path(query)):
            shutil.rmtree(path, ignore_errors=True)
        topics = [query.output_topic, self.dead_letter_topic(query), *query.repartition_topics]
        admin.delete_topics(self.bootstrap, topics, settings=self.settings)
        # Kafka deletes asynchronously: a run started meanwhile would find the old topic, then lose it.
        deadline = time.monotonic() + self.settings.kafka_timeout_s
        while set(topics) & set(admin.list_topics(self.bootstrap, self.settings)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{query.name}: topics {topics} not deleted within "
                                   f"{self.settings.kafka_timeout_s:.0f} s")
            time.sleep(0.2)

    @_on_its_cluster
    def backfill(self, query: Query, start_ms: int, end_ms: int) -> RunReport:
        """Recompute [start_ms, end_ms) in batch mode with the same plan — over the input up to
        end_ms, so joins see the state that time range had — and replace that range of the Delta
        table in one commit (delta-spark, from the executors: `spark.batch.backfill`). Results
        the table cannot take are left out and counted as dead letters (not written to the
        dead-letter topic: a backfill produces nothing to Kafka)."""
        from streamjoin.spark import batch, delta_writes
        from streamjoin.spark.query import task_processor, task_routing
        from streamjoin.spark.sources import source_on_brokers

        if len(query.compiled) > 1:
            raise NotImplementedError(f"{query.name}: backfill of a query with a repartition topic")
        self._connect()
        sub, path = query.compiled[-1], self.delta_path(query)
        table_rows = DeltaOutput(sub, path).rows(self.spark)
        written = batch.backfill(self.spark, task_processor(sub), sub.input_topics, self.kafka_options(), table_rows,
                                 start_ms, end_ms, routing=task_routing(sub, self.client_config),
                                 source=source_on_brokers(self.settings.kafka_source, self.brokers_are_tansu(query)))
        return RunReport(query=query.name, output_rows=written["rows"], dead_letters=written["rejected"],
                         delta_path=path, delta_version=delta_writes.version(self.spark, path),
                         output_topic=query.output_topic)

    @_on_its_cluster
    def copartitioning_problems(self, query: Query) -> list[str]:
        """Joins whose inputs (as they reach the join: after any repartition topic) do not have
        the same partition count on the broker (declared count for topics not created yet)."""
        self._connect()
        problems = []
        for sub in query.compiled:
            # A foreign-key join needs no co-partitioning: every task reads its referenced table whole.
            for join in (n for n in walk(sub.sink) if isinstance(n, P.Join) and not isinstance(n, P.ForeignKeyJoin)):
                sides = [[s.source for s in walk(side) if isinstance(s, P.Source)] for side in (join.left, join.right)]
                topics = [s.topic for side in sides for s in side]
                actual = admin.partition_counts(self.bootstrap, topics, settings=self.settings, missing_ok=True)
                counts = [{s.name: actual.get(s.topic, s.partitions or 1) for s in side} for side in sides]
                if len(set(counts[0].values()) | set(counts[1].values())) > 1:
                    problems.append(f"{query.name}: {join.label} inputs are not co-partitioned: "
                                    f"{counts[0]} vs {counts[1]} partitions; repartition one side "
                                    f"(PARTITION BY ... WITH (PARTITIONS=n))")
        return problems


def _merge(report: RunReport, main: RunReport) -> RunReport:
    main.query, main.output_topic, main.delta_path = report.query, report.output_topic, report.delta_path
    main.dead_letters += report.dead_letters
    return main


def _checkpoint_offsets(checkpoint: Path) -> dict:
    """The source offsets of the last batch in a Spark checkpoint ({} before the first run)."""
    offsets = checkpoint / "offsets"
    batches = sorted(int(p.name) for p in offsets.glob("[0-9]*")) if offsets.exists() else []
    if not batches:
        return {}
    lines = (offsets / str(batches[-1])).read_text().splitlines()
    return json.loads(lines[-1]) if lines else {}
