"""Run a compiled sub-topology as a Spark streaming query, Kafka to Kafka (+ Delta).

    Kafka source (`sources`: Spark's own, or streamjoin_kafka) ─▶ groupBy(task)  [Kafka partition, one per core; TaskRouting]
      ─▶ transformWithStateInPandas(TaskProcessor)  [decode, join, project, encode; state per task]
         each task, after its batch (`task_sink.TaskSink`): results its topic or the Delta table
         cannot take become dead letters; the rest are produced to Kafka (+ replay header) from
         the task; dead letters to their topic; Delta rows and dead letters packed for Spark
      ─▶ foreachBatch (`_write_batch`): the batch kept on the executors (persist); the driver
         collects the tasks' figures (one METRICS row a task, never a result row), then has
         delta-spark write the Delta rows and the dead letters from the executors
         (`delta_writes`: append / MERGE, exactly once per batch id), and writes the batch's
         figures (`batch_figures`).

On a broker that honours transactions each task's Kafka results of a batch commit in one
transaction (`task_sink`), so `read_committed` readers see them exactly once; elsewhere the sink is
at-least-once: a replayed batch's records carry the same `streamjoin.id` header
(query@epoch:batch:task.seq) again, so readers drop the copies (`dedupe_replayed`); the epoch is
the checkpoint's (`replay_writer_id`). Delta commits are exactly-once (app transactions).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pyspark import StorageLevel, cloudpickle
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from streamjoin.delta.rows import TableRows, unified_schema
from streamjoin.kafka import offsets
from streamjoin.runtime.compiled import CompiledQuery
from streamjoin.runtime.contract import STATE_FORMAT
from streamjoin.runtime.report import Laps, RunReport
from streamjoin.settings import KafkaSource
from streamjoin.spark import delta_writes
from streamjoin.spark.adapter import METRICS, OUTPUT_SCHEMA, TaskProcessor
from streamjoin.spark.batch_figures import BatchFigures
from streamjoin.spark.dead_letters import DEAD_LETTER_ARROW_SCHEMA
from streamjoin.spark.paged_state import incompatible
from streamjoin.spark.sources import input_rows, source_for_run
from streamjoin.spark.task_keys import task_key
from streamjoin.spark.task_sink import DEAD_ROWS, TABLE_ROWS, DeadLetters, TaskSink


class QueryFailed(RuntimeError):
    """A streaming query stopped with an error; the message is its root cause in one line (the
    error streamjoin raised inside Spark, e.g. a data-loss or broker error), not Spark's trace."""

    def __init__(self, name: str, spark_message: str) -> None:
        self.name, self.spark_message, self.cause = name, spark_message, root_cause(spark_message)
        super().__init__(f"query {name} failed: {self.cause}")

    def raised(self, error: type[Exception]) -> bool:
        """Whether the root cause is `error`, one of ours raised inside Spark (`_OUR_ERRORS`)."""
        return self.cause.startswith(f"{error.__name__}:")

    def java_client_timed_out(self) -> bool:
        """Whether Spark's Kafka connector gave up waiting for the brokers (its waits are within
        streamjoin's broker timeout: `sources.spark_connector_options`): the Java client's own
        timeout, or the task's poll for records it knows exist."""
        return _JAVA_CLIENT_TIMEOUT.search(self.spark_message) is not None


_JAVA_CLIENT_TIMEOUT = re.compile(r"org\.apache\.kafka\.common\.errors\.TimeoutException|"
                                  r"java\.util\.concurrent\.TimeoutException: Cannot fetch record")

# Errors raised inside Spark whose message is the whole story for a user.
_OUR_ERRORS = re.compile(r"(?:[\w.]+\.)?(DataLossError|KafkaUnreachable|KafkaAuthenticationFailed|KafkaTimeoutError|NoBrokersAvailable|CheckpointIncompatible|ProduceFailed)\b:?\s*(.*)")


def root_cause(spark_message: str) -> str:
    """The line of a Spark error that says what went wrong: one of ours where the Python
    traceback inside it has one, else the last `SomethingError: ...` line, else the first line."""
    lines = [line.strip() for line in spark_message.splitlines() if line.strip()]
    for line in reversed(lines):
        match = _OUR_ERRORS.search(line)
        if match:
            return f"{match.group(1)}: {match.group(2)}".rstrip(": ")
    errors = [line for line in lines if re.match(r"^[\w.]*(Error|Exception): ", line)]
    return (errors[-1] if errors else lines[0] if lines else "unknown error")[:500]


FINISH_TRIGGER_TIMEOUT_S = 120.0  # a batch still running after this long is interrupted


def finish_trigger(query, timeout_s: float = FINISH_TRIGGER_TIMEOUT_S) -> bool:
    """Waits until the query's trigger under way (if any) has finished; False if it still ran at
    the timeout. Stopping between triggers never interrupts a batch half-written."""
    deadline = time.monotonic() + timeout_s
    while query.isActive and query.status.get("isTriggerActive"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


class TableOutput(Protocol):
    """A table the results also go to (the Delta output): `rows` is what a task converts its sink
    records into, with the table's schema as the query starts (the check moves into the tasks);
    `write` commits a batch's rows (a DataFrame on the executors) once per batch id and returns
    the table version."""

    def rows(self, spark: SparkSession) -> TableRows: ...

    def write(self, rows: DataFrame, batch_id: int) -> int | None: ...


@dataclass(frozen=True)
class SinkTarget:
    """Where a sub-topology's results go besides its Kafka topic."""

    table: TableOutput | None = None
    dead_letters: DeadLetters | None = None


@dataclass(frozen=True)
class TaskRouting:
    """Which tasks read a row: the task of its Kafka partition, and for a broadcast topic every
    one of the `tasks` tasks (a foreign-key join's referenced table, as in a Kafka Streams
    GlobalKTable). `tasks` is the partition count of the widest input topic."""

    broadcast_topics: frozenset[str] = frozenset()
    tasks: int = 1

    def assign(self, rows: DataFrame, shuffle_partitions: int) -> DataFrame:
        """`rows` with a `task` column, the grouping key of the row's task (`task_keys`), a key
        that puts each task on its own of the `shuffle_partitions`. A broadcast topic's row comes
        once per task."""
        task = F.col("partition")
        if self.broadcast_topics:
            every = F.sequence(F.lit(0), F.lit(self.tasks - 1))
            tasks = F.when(F.col("topic").isin(*sorted(self.broadcast_topics)), every).otherwise(F.array("partition"))
            rows, task = rows.withColumn("task", F.explode(tasks)), F.col("task")
        keys = F.array(*(F.lit(task_key(t, shuffle_partitions)) for t in range(self.tasks)))
        # A partition added to a topic after the query started keeps its number as its key.
        return rows.withColumn("task", F.coalesce(F.try_element_at(keys, task + 1), task))


CHECKPOINT_NOTES = "streamjoin-checkpoint.json"


def checkpoint_shuffle_partitions(spark: SparkSession, checkpoint: Path) -> int:
    """The shuffle partitions the query's state is spread over, for `TaskRouting.assign`: Spark
    keeps a checkpoint's first count for good, so it is noted beside the checkpoint when the
    query first starts, with the layout of its task state (`STATE_FORMAT`). A checkpoint Spark
    has written batches to without that layout's note is refused (CheckpointIncompatible)
    before any batch runs: formats up to 2 kept state where this streamjoin does not look."""
    notes = read_notes(checkpoint)
    if notes.get("state_format") == STATE_FORMAT:
        return int(notes["shuffle_partitions"])
    if any((checkpoint / "offsets").glob("[0-9]*")):
        raise incompatible(str(notes.get("state_format", "2 or older")), f"checkpoint {checkpoint}")
    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    write_notes(checkpoint, {**notes, "shuffle_partitions": partitions, "state_format": STATE_FORMAT})
    return partitions


def replay_writer_id(query_name: str, checkpoint: Path) -> str:
    """The writer part of the replay ids of a query's results, "<query>@<epoch>": the epoch is
    minted when the checkpoint is created and noted beside it, so a replayed batch carries the
    ids of its first attempt, while another query writing the same topic, or this query after a
    reset (a new checkpoint, perhaps a changed query whose batch numbers start at 0 again), never
    carries ids an earlier record holds (`records.dedupe_replayed` would drop the new record)."""
    notes = read_notes(checkpoint)
    if "replay_epoch" not in notes:
        notes["replay_epoch"] = uuid.uuid4().hex[:12]
        write_notes(checkpoint, notes)
    return f"{query_name}@{notes['replay_epoch']}"


def read_notes(checkpoint: Path) -> dict:
    """What streamjoin notes beside a checkpoint (`CHECKPOINT_NOTES`): shuffle partitions, state
    format, replay epoch, the identity of the data read (`app.identity`)."""
    notes_file = checkpoint / CHECKPOINT_NOTES
    return json.loads(notes_file.read_text()) if notes_file.exists() else {}


def write_notes(checkpoint: Path, notes: dict) -> None:
    checkpoint.mkdir(parents=True, exist_ok=True)
    (checkpoint / CHECKPOINT_NOTES).write_text(json.dumps(notes))


@dataclass
class StreamingRun:
    """One execution of a sub-topology from its checkpoint."""

    name: str
    input_topics: tuple[str, ...]
    task_processor: TaskProcessor
    kafka_options: dict[str, str]  # kafka.bootstrap.servers, security, streamjoin.onDataLoss
    checkpoint: Path
    client_config: dict
    writer_id: str  # of the replay ids (`replay_writer_id`)
    target: SinkTarget = field(default_factory=SinkTarget)
    end_of_input: bool = False  # bounded: the source marks the end, the tasks flush all windows
    max_offsets_per_trigger: int | None = None
    routing: TaskRouting = field(default_factory=TaskRouting)
    transactions: tuple[str, str] | None = None  # (query, step): exactly-once to Kafka (`TaskSink`)
    source: KafkaSource = KafkaSource.SPARK  # what it reads Kafka with (`sources`)
    figures: BatchFigures = field(init=False)
    table_rows: TableRows | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.figures = BatchFigures(self.checkpoint)

    def start(self, spark: SparkSession, trigger: dict | None = None):
        """Starts the query; `refresh(report)` adds what its batches did since the last call."""
        if self.target.table is not None:  # the tasks check their results against the table as it is now
            self.table_rows = self.target.table.rows(spark)
        self.task_processor.sink = TaskSink(self.client_config, self.writer_id,
                                            table=cloudpickle.dumps(self.table_rows) if self.table_rows else None,
                                            dead_letters=self.target.dead_letters, transactions=self.transactions)
        source = source_for_run(self.source, self.end_of_input, self.kafka_options.get("streamjoin.onDataLoss", "fail"))
        rows = input_rows(spark, source, self.input_topics, self.kafka_options, self.end_of_input,
                          self.max_offsets_per_trigger)
        tasks = self.routing.assign(rows, checkpoint_shuffle_partitions(spark, self.checkpoint))
        results = tasks.groupBy("task").transformWithStateInPandas(
            self.task_processor, OUTPUT_SCHEMA, "Append", "None")
        self.figures.clear()
        writer = (results.writeStream.queryName(self.name)
                  .option("checkpointLocation", str(self.checkpoint))
                  .foreachBatch(self._write_batch))
        return writer.trigger(**(trigger or {"availableNow": True})).start()

    def refresh(self, report: RunReport) -> int:
        """Adds the batches finished since the last call to `report`; how many."""
        return self.figures.fold_into(report)

    def run(self, spark: SparkSession, report: RunReport) -> RunReport:
        started = time.monotonic()
        query = self.start(spark)
        try:
            query.awaitTermination()
        except Exception as error:  # Spark's wrapper around the cause: say the cause in one line
            raise QueryFailed(self.name, str(error)) from None
        elapsed = time.monotonic() - started
        self.refresh(report)
        report.rows_per_second = report.input_rows / elapsed if elapsed > 0 else 0.0
        _add_progress(report, query.recentProgress, elapsed)
        return report

    def run_continuous(self, spark: SparkSession, report: RunReport, stop_after_s: float | None = None,
                       on_progress=None, interval_ms: int = 200) -> RunReport:
        """A long-running query (processing-time trigger) until `stop_after_s` or until it fails;
        `on_progress(report)` after each batch, so the orchestrator sees figures while it runs.
        At `stop_after_s` the batch under way finishes (written and committed) before the query
        stops, so a timed run ends on a batch boundary, as a requested stop does."""
        query = self.start(spark, {"processingTime": f"{interval_ms} milliseconds"})
        started = time.monotonic()

        def progressed() -> None:
            if self.refresh(report):
                report.rows_per_second = report.input_rows / max(time.monotonic() - started, 1e-3)
                if on_progress is not None:
                    on_progress(report)
        try:
            while query.isActive:
                if stop_after_s is not None and time.monotonic() - started >= stop_after_s:
                    finish_trigger(query)  # if it gives up, the batch is interrupted: the next run replays it
                    break
                try:
                    query.awaitTermination(1)
                except Exception:  # noqa: BLE001 - it failed: raised below as one line (QueryFailed)
                    break
                progressed()
        finally:
            query.stop()
            progressed()  # a batch that ended while the query stopped
        if query.exception() is not None:
            raise QueryFailed(self.name, str(query.exception()))
        return report

    def _write_batch(self, df: DataFrame, batch_id: int) -> None:
        lap = Laps()
        # Kept where the tasks computed it: the figures and each Delta write read it again, and
        # running the tasks again would repeat their state changes and produces.
        df = df.persist(StorageLevel.MEMORY_AND_DISK)
        try:
            tasks, driver_rows = task_figures(df)
            lap("driver.tasks")  # the Spark job: read Kafka, shuffle to tasks, run them, produce
            delta_version = self._write_delta(df, tasks, batch_id)
            lap("driver.delta_write")
            self._write_dead_letters(df, tasks, batch_id)
            lap("driver.dead_letters")
        finally:
            df.unpersist()
        total = {name: sum(task.pop(name, 0) for task in tasks)
                 for name in ("produced", "rejected_by_table", "refused_by_kafka", "table_rows", "dead_letter_rows")}
        self.figures.write(batch_id, {"tasks": tasks, "rejected_by_table": total["rejected_by_table"],
                                      "refused_by_kafka": total["refused_by_kafka"], "delta_version": delta_version,
                                      "output_rows": total["produced"], "driver_rows": driver_rows,
                                      "seconds": lap.seconds})

    def _write_delta(self, df: DataFrame, tasks: list[dict], batch_id: int) -> int | None:
        if self.table_rows is None or not sum(task.get("table_rows", 0) for task in tasks):
            return None
        schema = unified_schema([task.pop("table_schema") for task in tasks if "table_schema" in task],
                                self.table_rows.row_schema)
        return self.target.table.write(delta_writes.unpacked(df, TABLE_ROWS, schema), batch_id)

    def _write_dead_letters(self, df: DataFrame, tasks: list[dict], batch_id: int) -> None:
        target = self.target.dead_letters
        if target is None or not sum(task.get("dead_letter_rows", 0) for task in tasks):
            return
        # One app id per sub-topology and checkpoint lifetime: each numbers its batches from 0 in
        # its own checkpoint, and again from 0 in a new one.
        delta_writes.append(delta_writes.unpacked(df, DEAD_ROWS, DEAD_LETTER_ARROW_SCHEMA), target.path,
                            f"dead-letters:{self.writer_id}", batch_id)


def task_figures(df: DataFrame) -> tuple[list[dict], int]:
    """Each task's figures of a batch (one METRICS row a task), and how many rows the driver took
    from the batch: the only rows of a batch that reach the driver (`driver_rows` in the batch's
    figures; tests/integration/test_driver_rows.py holds it to the task count)."""
    rows = df.filter(F.col("channel") == METRICS).select("reason", "src_partition").collect()
    return [{**json.loads(figures), "task": task} for figures, task in rows], len(rows)


def task_routing(query: CompiledQuery, client_config: dict) -> TaskRouting:
    """One task per partition of the widest input topic (on the broker), so every row of a
    broadcast topic also has a task that owns, counts and dead-letters it."""
    with offsets.OffsetClient(client_config) as client:
        widest = 1 + max(tp.partition for tp in client.topic_partitions(list(query.input_topics)))
    return TaskRouting(query.broadcast_topics, widest)


def task_processor(query: CompiledQuery, sink: TaskSink | None = None) -> TaskProcessor:
    return TaskProcessor(query.factory, frozenset(query.input_topics), sink)


def streaming_run(query: CompiledQuery, kafka_options: dict[str, str], client_config: dict, checkpoint: Path,
                  end_of_input: bool = False, target: SinkTarget = SinkTarget(),
                  transactions: str | None = None, source: KafkaSource = KafkaSource.SPARK) -> StreamingRun:
    """`transactions`: the name of the query this step is part of, whose tasks then write to Kafka
    in transactions (exactly-once); None: at-least-once."""
    # Named after its sink topic: unique among the queries running at once. Its tasks produce
    # their results themselves (`TaskSink`, set when it starts).
    name, writer_id = query.sink.topic, replay_writer_id(query.name, checkpoint)
    return StreamingRun(name, query.input_topics, task_processor(query), kafka_options, checkpoint,
                        client_config, writer_id, target=target, end_of_input=end_of_input,
                        routing=task_routing(query, client_config),
                        transactions=None if transactions is None else (transactions, query.name),
                        source=source)


def run_available(spark: SparkSession, query: CompiledQuery, kafka_options: dict[str, str], client_config: dict,
                  checkpoint: Path, end_of_input: bool = False,
                  source: KafkaSource = KafkaSource.SPARK) -> RunReport:
    """Process everything new on the query's inputs (availableNow) from its checkpoint."""
    run = streaming_run(query, kafka_options, client_config, checkpoint, end_of_input, source=source)
    return run.run(spark, RunReport(query=query.name, output_topic=query.sink.topic))


def _add_progress(report: RunReport, progress: list, elapsed: float) -> None:
    """Spark's own time per batch phase (planning, offsets, the write-ahead log, commits), summed
    over the run's batches, and the run's wall time: what is left of it is query start-up."""
    phases: dict[str, float] = {}
    for batch in progress:
        for phase, ms in (batch.durationMs or {}).items():
            phases[f"spark.{phase}"] = phases.get(f"spark.{phase}", 0.0) + ms / 1000
    report.add_seconds({**phases, "wall": elapsed})
