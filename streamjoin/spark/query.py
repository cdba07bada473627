"""Run a compiled sub-topology as a Spark streaming query, Kafka to Kafka (+ Delta).

    streamjoin_kafka source (all input topics, records packed in chunks) ─▶ groupBy(task)  [Kafka partition, one per core; TaskRouting]
      ─▶ transformWithStateInPandas(TaskProcessor)  [decode, join, project, encode; state per task]
      ─▶ foreachBatch: results unpacked (packing); sink records → Kafka (+ replay header) and
         Delta; dead letters → their topic and Delta table; metric deltas → the run's report
         (`batch_figures`). A query without a Delta output has its tasks produce their sink
         records themselves (`TaskSink`), so only dead letters and metrics reach the driver.

The Kafka sink is at-least-once: a crash after producing and before the checkpoint commit
replays the batch; its records carry the same `streamjoin.id` header (query@epoch:batch:task.seq)
again, so readers drop the copies (`dedupe_replayed`); the epoch is the checkpoint's (`replay_writer_id`). Delta commits are exactly-once (app transactions).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from streamjoin.kafka import offsets
from streamjoin.kafka.limits import KAFKA_DEFAULT_LIMIT, oversized, topic_limit
from streamjoin.kafka.rdkafka import produce_arrow
from streamjoin.runtime.compiled import CompiledQuery
from streamjoin.runtime.contract import STATE_FORMAT
from streamjoin.runtime.report import Laps, RunReport
from streamjoin.spark.adapter import (
    DEAD_LETTER,
    METRICS,
    OUTPUT_SCHEMA,
    SINK,
    TaskProcessor,
    TaskSink,
)
from streamjoin.spark.batch_figures import BatchFigures
from streamjoin.spark.packing import unpack_results
from streamjoin.spark.paged_state import incompatible
from streamjoin.spark.session import kafka_source_for_query
from streamjoin.spark.task_keys import task_key


class QueryFailed(RuntimeError):
    """A streaming query stopped with an error; the message is its root cause in one line (the
    error streamjoin raised inside Spark, e.g. a data-loss or broker error), not Spark's trace."""

    def __init__(self, name: str, spark_message: str) -> None:
        self.name, self.spark_message = name, spark_message
        super().__init__(f"query {name} failed: {root_cause(spark_message)}")


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


class TableOutput(Protocol):
    """A table the results also go to (the Delta output): `prepare` converts a batch's sink records
    before anything is written and names those that do not fit; `write` commits the prepared rows
    once per batch id and returns the table version."""

    def prepare(self, records: pa.Table) -> tuple[pa.Table, list[tuple[int, str]]]: ...

    def write(self, rows: pa.Table, batch_id: int) -> int | None: ...


@dataclass(frozen=True)
class SinkTarget:
    """Where a sub-topology's results go besides its Kafka topic."""

    table: TableOutput | None = None
    dead_letter_writer: Callable[[pa.Table, int], object] | None = None


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
    figures: BatchFigures = field(init=False)

    def __post_init__(self) -> None:
        self.figures = BatchFigures(self.checkpoint)

    def start(self, spark: SparkSession, trigger: dict | None = None):
        """Starts the query; `refresh(report)` adds what its batches did since the last call."""
        reader = (spark.readStream.format(kafka_source_for_query(spark)).options(**self.kafka_options)
                  .option("subscribe", ",".join(self.input_topics))
                  .option("startingOffsets", self.kafka_options.get("startingOffsets", "earliest")).option("streamjoin.packed", "true")
                  .option("streamjoin.endOfInput", str(self.end_of_input).lower()))
        if self.max_offsets_per_trigger:
            reader = reader.option("maxOffsetsPerTrigger", str(self.max_offsets_per_trigger))
        tasks = self.routing.assign(reader.load(), checkpoint_shuffle_partitions(spark, self.checkpoint))
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
        `on_progress(report)` after each batch, so the orchestrator sees figures while it runs."""
        query = self.start(spark, {"processingTime": f"{interval_ms} milliseconds"})
        started = time.monotonic()
        try:
            while query.isActive and (stop_after_s is None or time.monotonic() - started < stop_after_s):
                try:
                    query.awaitTermination(1)
                except Exception:  # noqa: BLE001 - it failed: raised below as one line (QueryFailed)
                    break
                if self.refresh(report) and on_progress is not None:
                    on_progress(report)
        finally:
            query.stop()
            self.refresh(report)  # a batch that ended while the query stopped
        if query.exception() is not None:
            raise QueryFailed(self.name, str(query.exception()))
        return report

    def _write_batch(self, df: DataFrame, batch_id: int) -> None:
        lap = Laps()
        table = unpack_results(df.toArrow())
        lap("driver.collect")  # the Spark job: read Kafka, shuffle to tasks, run them, bring results back
        channel = table.column("channel")
        sink = table.filter(pa.compute.equal(channel, SINK))
        dead = table.filter(pa.compute.equal(channel, DEAD_LETTER))
        sink, too_large, max_bytes = _within_topic_limits(sink, self.client_config)
        dead = pa.concat_tables([dead, too_large])
        prepared, rejected, delta_version = None, [], None
        if self.target.table is not None and sink.num_rows:
            # Checked before anything is written: a result the table cannot take is kept out of
            # Kafka too, so the topic and the table never disagree.
            prepared, rejected = self.target.table.prepare(sink)
            if rejected:
                dead = pa.concat_tables([dead, _as_dead_letters(sink, rejected)])
                kept = set(range(sink.num_rows)) - {index for index, _ in rejected}
                sink = sink.take(sorted(kept))
        lap("driver.delta_prepare")
        self._produce(sink, batch_id, max_bytes)
        lap("driver.produce")
        if prepared is not None and prepared.num_rows:
            delta_version = self.target.table.write(prepared, batch_id)
        lap("driver.delta_write")
        if dead.num_rows and self.target.dead_letter_writer is not None:
            self.target.dead_letter_writer(dead, batch_id)
        lap("driver.dead_letters")
        metrics = table.filter(pa.compute.equal(channel, METRICS))
        tasks = [{**json.loads(figures), "task": task} for figures, task
                 in zip(metrics.column("reason").to_pylist(), metrics.column("src_partition").to_pylist())]
        produced = sum(task.pop("produced", 0) for task in tasks)  # by the tasks themselves (`TaskSink`)
        self.figures.write(batch_id, {"tasks": tasks, "rejected_by_table": len(rejected),
                                      "refused_by_kafka": too_large.num_rows,
                                      "delta_version": delta_version, "output_rows": sink.num_rows + produced,
                                      "seconds": lap.seconds})

    def _produce(self, sink: pa.Table, batch_id: int, max_bytes: int) -> None:
        if not sink.num_rows:
            return
        records = pa.table({"topic": sink.column("topic"), "key": sink.column("key"), "value": sink.column("value"),
                            "timestamp": sink.column("ts").cast(pa.timestamp("ms")), "headers": sink.column("headers")})
        produce_arrow(self.client_config, records.to_batches(), self.writer_id, batch_id, max_bytes=max_bytes)


def task_routing(query: CompiledQuery, client_config: dict) -> TaskRouting:
    """One task per partition of the widest input topic (on the broker), so every row of a
    broadcast topic also has a task that owns, counts and dead-letters it."""
    with offsets.OffsetClient(client_config) as client:
        widest = 1 + max(tp.partition for tp in client.topic_partitions(list(query.input_topics)))
    return TaskRouting(query.broadcast_topics, widest)


def task_processor(query: CompiledQuery, sink: TaskSink | None = None) -> TaskProcessor:
    return TaskProcessor(query.factory, frozenset(query.input_topics), sink)


def streaming_run(query: CompiledQuery, kafka_options: dict[str, str], client_config: dict, checkpoint: Path,
                  end_of_input: bool = False, target: SinkTarget = SinkTarget()) -> StreamingRun:
    # Named after its sink topic: unique among the queries running at once. Without a table
    # output, the tasks produce their results themselves (`TaskSink`).
    name, writer_id = query.sink.topic, replay_writer_id(query.name, checkpoint)
    sink = TaskSink(client_config, writer_id) if target.table is None else None
    return StreamingRun(name, query.input_topics, task_processor(query, sink), kafka_options, checkpoint,
                        client_config, writer_id, target=target, end_of_input=end_of_input,
                        routing=task_routing(query, client_config))


def run_available(spark: SparkSession, query: CompiledQuery, kafka_options: dict[str, str], client_config: dict,
                  checkpoint: Path, end_of_input: bool = False) -> RunReport:
    """Process everything new on the query's inputs (availableNow) from its checkpoint."""
    run = streaming_run(query, kafka_options, client_config, checkpoint, end_of_input)
    return run.run(spark, RunReport(query=query.name, output_topic=query.sink.topic))


def _within_topic_limits(sink: pa.Table, client_config: dict) -> tuple[pa.Table, pa.Table, int]:
    """The sink rows their topic takes, dead letters of those too large for it (their value left
    out: the dead-letter topic would refuse it too), and the largest record batch the topics take."""
    topics = sink.column("topic").to_pylist()
    limits = {topic: topic_limit(client_config, topic) for topic in set(topics)}
    headers = [[(h["key"], h["value"]) for h in row] if row else None for row in sink.column("headers").to_pylist()]
    refused = oversized(limits, topics, sink.column("key").to_pylist(), sink.column("value").to_pylist(), headers)
    smallest = min(limits.values(), default=KAFKA_DEFAULT_LIMIT)
    if not refused:
        return sink, sink.slice(0, 0), smallest
    too_large = _as_dead_letters(sink, refused)
    too_large = too_large.set_column(too_large.schema.get_field_index("value"), "value",
                                     pa.nulls(too_large.num_rows, pa.binary()))
    kept = sink.take(sorted(set(range(sink.num_rows)) - {index for index, _ in refused}))
    return kept, too_large, smallest


def _as_dead_letters(sink: pa.Table, rejected: list[tuple[int, str]]) -> pa.Table:
    """Sink rows the table output rejected, as dead-letter rows (their input's coordinates, the
    encoded result as key and value, the reason)."""
    rows = sink.take([index for index, _ in rejected])
    return rows.set_column(rows.schema.get_field_index("reason"), "reason", pa.array([r for _, r in rejected])) \
        .set_column(0, "channel", pa.array([DEAD_LETTER] * rows.num_rows))


def _add_progress(report: RunReport, progress: list, elapsed: float) -> None:
    """Spark's own time per batch phase (planning, offsets, the write-ahead log, commits), summed
    over the run's batches, and the run's wall time: what is left of it is query start-up."""
    phases: dict[str, float] = {}
    for batch in progress:
        for phase, ms in (batch.durationMs or {}).items():
            phases[f"spark.{phase}"] = phases.get(f"spark.{phase}", 0.0) + ms / 1000
    report.add_seconds({**phases, "wall": elapsed})
