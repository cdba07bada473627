"""Running a project's query for real: topics, checkpoints, the Delta copy, dead letters, lag.

State lives under `Settings.home`: `checkpoints/<query>/<sub-topology>` (Spark offsets + task
state) and `delta/<query>` (the output table), `delta/<query>-dead-letters`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa

from streamjoin.broker import ensure_bootstrap
from streamjoin.config import Settings, kafka_client_config
from streamjoin.deadletter import write_dead_letters
from streamjoin.delta import DeltaSink
from streamjoin.formats import decode
from streamjoin.kafka import admin
from streamjoin.project import QuerySpec, RunReport
from streamjoin.spark.query import SinkTarget
from streamjoin.sqlproject import compile_file
from streamjoin.topology import CompiledQuery

TOMBSTONE = "__tombstone"


def checkpoint_root(spec: QuerySpec, settings: Settings) -> Path:
    return settings.home / "checkpoints" / spec.name


def ensure_topics(bootstrap: str, settings: Settings, compiled: list[CompiledQuery]) -> None:
    """Create every topic the query reads or writes that does not exist yet (declared counts)."""
    wanted: dict[str, int] = {}
    for query in compiled:
        for topic, partitions in query.topic_partitions().items():
            wanted[topic] = partitions
    admin.create_topics(bootstrap, wanted, settings=settings)


def delta_writer(query: CompiledQuery, path: str):
    """Decodes the sink records of a batch into the output Delta table: append for a stream,
    MERGE by key (delete on tombstone) for a table; exactly-once per batch id."""
    keys = [name for name, _ in query.sink_serde.key_columns]
    sink = DeltaSink(path, mode="merge" if query.sink.kind == "table" and keys else "append",
                     key_columns=keys, app_id=query.name)

    def write(records: pa.Table, batch_id: int) -> int | None:
        return sink.write_batch(pa.Table.from_pylist(decoded_rows(query, records)), batch_id)

    return write


def decoded_rows(query: CompiledQuery, records: pa.Table) -> list[dict]:
    """Sink records (key/value bytes) as output rows: key columns, value columns, `__ts`, and
    `__tombstone` for a deletion."""
    serde = query.sink_serde
    keys = [name for name, _ in serde.key_columns]
    rows = []
    for key, value, ts in zip(*(records.column(c).to_pylist() for c in ("key", "value", "ts"))):
        decoded = decode(serde, key, value, ts)
        row = dict(zip(keys, decoded.key or (None,) * len(keys)))
        row.update(decoded.value or {})
        rows.append({**row, "__ts": ts, TOMBSTONE: decoded.value is None})
    return rows


def dead_letter_writer(query: CompiledQuery, topic: str, path: str, bootstrap: str):
    def write(dead: pa.Table, batch_id: int) -> int:
        frame = pa.table({
            "source_topic": dead.column("src_topic"), "partition": dead.column("src_partition"),
            "offset": dead.column("src_offset"), "timestamp": dead.column("ts"),
            "key": dead.column("key"), "value": dead.column("value"), "reason": dead.column("reason"),
            "query": pa.array([query.name] * dead.num_rows)})
        return write_dead_letters(frame, batch_id, topic, path, bootstrap=bootstrap)

    return write


def run_query(spec: QuerySpec, *, mode: str | None = None, stop_after_s: float | None = None,
              on_progress=None, spark=None) -> RunReport:
    from streamjoin.spark.session import get_spark

    settings = Settings.from_env()
    bootstrap = ensure_bootstrap(settings)
    spark = spark or get_spark()
    compiled = compile_file(spec.path)
    ensure_topics(bootstrap, settings, compiled)
    client = kafka_client_config(settings, bootstrap)
    dead_topic = f"{spec.name}-dead-letters"
    admin.create_topics(bootstrap, {dead_topic: 1}, settings=settings)
    report = RunReport(query=spec.name, output_topic=spec.output_topic, delta_path=spec.delta_path)
    for query in compiled:
        is_main = query is compiled[-1]
        target = SinkTarget(
            delta_writer=delta_writer(query, spec.delta_path) if is_main else None,
            dead_letter_writer=dead_letter_writer(query, dead_topic, spec.delta_path + "-dead-letters", bootstrap))
        run = query.streaming_run(bootstrap, client, checkpoint_root(spec, settings) / query.name, target=target)
        if is_main and (mode or spec.mode) == "continuous":
            run.run_continuous(spark, report, stop_after_s=stop_after_s, on_progress=on_progress)
        else:
            sub_report = run.run(spark, RunReport(query=query.name))
            if is_main:
                report = _merge(report, sub_report)
            else:  # a repartition step: only its dead letters belong to the query's figures
                report.dead_letters += sub_report.dead_letters
    report.consumer_lag = consumer_lag(spec, settings, bootstrap)
    return report


def _merge(report: RunReport, main: RunReport) -> RunReport:
    main.query, main.output_topic, main.delta_path = report.query, report.output_topic, report.delta_path
    main.dead_letters += report.dead_letters
    return main


def consumer_lag(spec: QuerySpec, settings: Settings | None = None, bootstrap: str | None = None) -> int:
    """Records on the query's source topics not yet in its checkpoint (all sub-topologies)."""
    settings = settings or Settings.from_env()
    bootstrap = bootstrap or ensure_bootstrap(settings)
    lag = 0
    for query in compile_file(spec.path):
        committed = _checkpoint_offsets(checkpoint_root(spec, settings) / query.name)
        for topic in query.input_topics:
            for partition, end in admin.end_offsets(bootstrap, topic, settings=settings).items():
                lag += max(0, end - committed.get(topic, {}).get(str(partition), 0))
    return lag


def _checkpoint_offsets(checkpoint: Path) -> dict:
    """The source offsets of the last batch in a Spark checkpoint ({} before the first run)."""
    offsets = checkpoint / "offsets"
    batches = sorted(int(p.name) for p in offsets.glob("[0-9]*")) if offsets.exists() else []
    if not batches:
        return {}
    lines = (offsets / str(batches[-1])).read_text().splitlines()
    return json.loads(lines[-1]) if lines else {}


def state_fingerprint(spec: QuerySpec) -> str:
    """Changes exactly when the compiled topology changes (operators, keys, windows, schema);
    comments or whitespace in the SQL leave it alone."""
    explained = "\n".join(q.explain_text() for q in compile_file(spec.path))
    return hashlib.sha256(explained.encode()).hexdigest()[:16]


def reset(spec: QuerySpec) -> None:
    settings = Settings.from_env()
    shutil.rmtree(checkpoint_root(spec, settings), ignore_errors=True)
    shutil.rmtree(spec.delta_path, ignore_errors=True)


def backfill(spec: QuerySpec, start_ms: int, end_ms: int, spark=None) -> RunReport:
    """Recompute [start_ms, end_ms) in batch mode with the same plan — over the input up to
    end_ms, so joins see the state that time range had — and replace that range of the Delta
    table in one commit."""
    from streamjoin.delta import replace_range
    from streamjoin.spark.batch import run_batch
    from streamjoin.spark.session import get_spark

    settings = Settings.from_env()
    bootstrap = ensure_bootstrap(settings)
    spark = spark or get_spark()
    compiled = compile_file(spec.path)
    if len(compiled) > 1:
        raise NotImplementedError(f"{spec.name}: backfill of a query with a repartition topic")
    query = compiled[-1]
    records = run_batch(spark, query.task_processor(), query.input_topics, bootstrap, ending_timestamp=end_ms,
                        routing=query.routing(kafka_client_config(settings, bootstrap)))
    in_range = pa.compute.and_(pa.compute.greater_equal(records.column("ts"), start_ms),
                               pa.compute.less(records.column("ts"), end_ms))
    records = records.filter(in_range)
    rows = decoded_rows(query, records)
    version = replace_range(spec.delta_path, pa.Table.from_pylist(rows) if rows else None, "__ts", start_ms, end_ms)
    return RunReport(query=spec.name, output_rows=len(rows), delta_path=spec.delta_path, delta_version=version,
                     output_topic=spec.output_topic)


def copartitioning_problems(spec: QuerySpec) -> list[str]:
    """Joins whose inputs (as they reach the join: after any repartition topic) do not have the
    same partition count on the broker (declared count for topics not created yet)."""
    from streamjoin.plan import nodes as P
    from streamjoin.topology import walk

    settings = Settings.from_env()
    bootstrap = ensure_bootstrap(settings)
    problems = []
    for query in compile_file(spec.path):
        # A foreign-key join needs no co-partitioning: every task reads its referenced table whole.
        for join in (n for n in walk(query.sink) if isinstance(n, P.Join) and not isinstance(n, P.ForeignKeyJoin)):
            sides = [[s.source for s in walk(side) if isinstance(s, P.Source)] for side in (join.left, join.right)]
            topics = [s.topic for side in sides for s in side]
            actual = admin.partition_counts(bootstrap, topics, settings=settings, missing_ok=True)
            counts = [{s.name: actual.get(s.topic, s.partitions or 1) for s in side} for side in sides]
            if len(set(counts[0].values()) | set(counts[1].values())) > 1:
                problems.append(f"{spec.name}: {join.label} inputs are not co-partitioned: "
                                f"{counts[0]} vs {counts[1]} partitions; repartition one side "
                                f"(PARTITION BY ... WITH (PARTITIONS=n))")
    return problems
