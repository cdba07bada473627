"""Shared plumbing for the join benchmarks: a private broker + Spark session, a ksqlDB query
planned and compiled by streamjoin, inputs encoded with each source's serde, timed runs, the streaming == batch check, the peak memory
of Spark's Python workers, and the size of the tasks' state.

Every run uses fresh topic names (a per-run suffix), so reruns never see old records.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from streamjoin.maven import Artifact

BASE_TS = 1_700_000_000_000
DRIVER_MEMORY = "4g"
BENCH_DIR = Path(__file__).resolve().parent
# The PyFlink peer's own virtualenv (`make flink-venv`; see bench/README.md).
FLINK_PYTHON = BENCH_DIR.parent / ".venv-flink" / "bin" / "python"
# Flink's Kafka connector for Flink 2.2, the newest on Maven Central (.venv-flink runs Flink 2.3).
FLINK_KAFKA = Artifact("org.apache.flink", "flink-sql-connector-kafka", "5.0.0-2.2")


@dataclass
class Bench:
    """What every benchmark run needs: broker, client config, Spark session, a scratch dir."""

    bootstrap: str
    client_config: dict
    spark: object
    work_dir: Path
    run_id: str

    def name(self, stem: str) -> str:
        return f"{stem}_{self.run_id}"


@contextlib.contextmanager
def bench_session(app_name: str) -> Iterator[Bench]:
    """An embedded broker under a private STREAMJOIN_HOME (stopped afterwards) and the session."""
    with tempfile.TemporaryDirectory(prefix="streamjoin-bench-") as tmp:
        os.environ["STREAMJOIN_HOME"] = tmp
        from streamjoin.kafka import embedded as broker
        from streamjoin.settings import Settings
        from streamjoin.kafka.client import kafka_client_config
        from streamjoin.spark.session import get_spark

        # The FK join's first batch writes 1M left rows of state: 1 GB (the default heap) ran
        # out of memory holding it; the machine has plenty.
        os.environ.setdefault("PYSPARK_SUBMIT_ARGS", f"--driver-memory {DRIVER_MEMORY} pyspark-shell")
        # Apache Kafka: on Tansu, Spark's own Kafka connector stops short of a partition's end
        # (docs/operations.md, "Spark ↔ Kafka"), and the hand-written jobs read with it.
        os.environ.setdefault("STREAMJOIN_BROKER_KIND", "kafka")
        settings = Settings.from_env()
        bootstrap = broker.ensure_bootstrap(settings)
        spark = get_spark(app_name=app_name)
        try:
            yield Bench(bootstrap, kafka_client_config(settings, bootstrap), spark, Path(tmp),
                        uuid.uuid4().hex[:6])
        finally:
            try:
                spark.stop()
            finally:  # also after a crashed JVM, whose stop() raises
                if not settings.kafka_bootstrap:
                    broker.stop(settings)


def load_average() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def compile_query(sql: str, sources: list[dict], dialect: str = "ksqldb"):
    """The sub-topologies (upstream first) of the one query in `sql`, and its catalog."""
    from streamjoin.plan.catalog import Catalog
    from streamjoin.plan import plan_program
    from streamjoin.plan.rewrites import split_repartitions
    from streamjoin.runtime.compiled import CompiledQuery

    catalog = Catalog.from_case_sources(sources)
    (query,) = plan_program(sql, catalog, dialect).queries
    return [CompiledQuery(sub, dialect) for sub in split_repartitions(query.root)], catalog


def create_topics(bench: Bench, queries) -> None:
    from streamjoin.kafka import admin

    partitions: dict[str, int] = {}
    for query in queries:
        partitions.update(query.topic_partitions())
    admin.create_topics(bench.bootstrap, partitions)


def produce(bench: Bench, catalog, source: str, rows: Iterable[tuple[object, dict | None, int]]) -> int:
    """Encode (key, value, ts) rows with `source`'s serde, partitioned as Kafka would, and send
    them with librdkafka (several times kafka-python's rate: the inputs of a 1M-event run are
    ready in seconds). Returns the number of records acknowledged; raises if any was not."""
    from confluent_kafka import Producer

    from streamjoin.kafka.client import rdkafka_config
    from streamjoin.kafka.records import place
    from streamjoin.runtime.compiler import source_serde

    definition = catalog.get(source)
    serde = source_serde(definition)
    placed = ((place(definition.topic, definition.partitions, serde, key, value, ts, n), (key, value, ts))
              for n, (key, value, ts) in enumerate(rows))
    producer = Producer({**rdkafka_config(bench.client_config), "acks": "all", "linger.ms": 20,
                         "batch.num.messages": 10_000, "queue.buffering.max.messages": 500_000})
    failures: list = []

    def delivered(error, _message) -> None:
        if error is not None:
            failures.append(error)

    sent = 0
    for p, _ in placed:
        record = p.record
        while True:
            try:
                producer.produce(p.topic, value=record.value, key=record.key, partition=p.partition,
                                 timestamp=record.timestamp_ms or 0, on_delivery=delivered)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
        sent += 1
        if sent % 10_000 == 0:
            producer.poll(0)
    unsent = producer.flush(60)
    if unsent or failures:
        raise RuntimeError(f"{unsent + len(failures)} of {sent} input records were not acknowledged"
                           + (f", e.g. {failures[0]}" if failures else ""))
    return sent


def topic_count(bench: Bench, topic: str) -> int:
    from streamjoin.kafka import admin

    return sum(admin.end_offsets(bench.bootstrap, topic).values())


@dataclass(frozen=True)
class Timed:
    input_records: int
    output_records: int
    seconds: float
    profile: dict | None = None  # stage -> seconds (streamjoin runs: RunReport.seconds, all sub-topologies)

    @property
    def rate(self) -> float:
        return self.input_records / self.seconds


def run_streamjoin(bench: Bench, queries, delta: Path | None = None) -> tuple[Timed, list[Path]]:
    """Run the sub-topologies in order (availableNow, Kafka to Kafka); the rate counts the
    records read by the last one (the join) over the wall time of all of them. With `delta`, the
    last one also writes its results to a Delta table there (delta-spark, from the executors),
    as every query the CLI and the Dagster assets run does; its output count is then the table's."""
    from streamjoin.app.outputs import DeltaOutput
    from streamjoin.runtime.report import RunReport
    from streamjoin.settings import Settings
    from streamjoin.spark.query import SinkTarget, streaming_run

    started = time.perf_counter()
    checkpoints, profile = [], {}
    for query in queries:
        checkpoints.append(bench.work_dir / "checkpoints" / (query.name + ("_delta" if delta else "")))
        table = DeltaOutput(query, str(delta)) if delta and query is queries[-1] else None
        run = streaming_run(query, {"kafka.bootstrap.servers": bench.bootstrap}, bench.client_config, checkpoints[-1],
                            target=SinkTarget(table=table), source=Settings.from_env().kafka_source)
        report = run.run(bench.spark, RunReport(query=query.name, output_topic=query.sink.topic))
        for stage, seconds in report.seconds.items():
            profile[stage] = profile.get(stage, 0.0) + seconds
    elapsed = time.perf_counter() - started
    output = (bench.spark.read.format("delta").load(str(delta)).count() if delta
              else topic_count(bench, queries[-1].sink.topic))
    return Timed(report.input_rows, output, elapsed, profile), checkpoints


def print_profile(profile: dict) -> None:
    """Where a streamjoin run's time went. Wall-clock stages (the driver's and Spark's) add up to
    the run; task stages are summed over the tasks, which run side by side on the cores."""
    wall = profile.get("wall", 0.0)
    driver = {k: v for k, v in profile.items() if k.startswith("driver.")}
    tasks = {k: v for k, v in profile.items() if k.startswith("task.")}
    spark = {k: v for k, v in profile.items() if k.startswith("spark.") and k not in ("spark.triggerExecution",
                                                                                       "spark.addBatch")}
    start_up = wall - profile.get("spark.triggerExecution", 0.0)
    print(f"  profile ({wall:,.1f} s wall): query start-up and idle {start_up:,.1f} s; Spark per batch "
          + ", ".join(f"{k[6:]} {v:,.1f} s" for k, v in sorted(spark.items(), key=lambda kv: -kv[1]) if v >= 0.05))
    stage = driver.get("driver.tasks", 0.0)  # the wall time of the batches' task stages
    print("    driver: " + ", ".join(f"{k[7:]} {v:,.1f} s" for k, v in sorted(driver.items(), key=lambda kv: -kv[1])))
    busy = sum(tasks.values())
    print(f"    tasks (summed over tasks): {busy:,.1f} s = "
          + ", ".join(f"{k[5:]} {v:,.1f}" for k, v in sorted(tasks.items(), key=lambda kv: -kv[1]) if v >= 0.05)
          + f"; the rest of the task stages' time on 2 cores is the Kafka source, the shuffle and Spark's "
            f"Python hops (~{max(stage * 2 - busy, 0):,.1f} task-s)")


def warm_up(bench: Bench) -> None:
    """Start the Python workers and load both Kafka connectors once, so the first measured query
    does not pay for it (the first read with Spark's own connector took ~8 s longer than the next)."""
    from streamjoin.kafka import admin
    from streamjoin.kafka.records import OutRecord

    topic = bench.name("warmup")
    admin.create_topics(bench.bootstrap, {topic: 2})
    admin.produce(bench.bootstrap, topic, (OutRecord(b"k%d" % n, b"{}", BASE_TS) for n in range(1000)))
    query = (bench.spark.readStream.format("streamjoin_kafka")
             .option("kafka.bootstrap.servers", bench.bootstrap).option("subscribe", topic).load()
             .groupBy("partition").count().writeStream.format("noop").outputMode("complete")
             .option("checkpointLocation", str(bench.work_dir / "warmup"))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    (bench.spark.read.format("kafka").option("kafka.bootstrap.servers", bench.bootstrap).option("subscribe", topic)
     .option("includeHeaders", "true").load().write.format("noop").mode("overwrite").save())


def warm_up_source(bench: Bench, records: int = 200_000, passes: int = 3) -> None:
    """Read `records` through Spark's own Kafka connector `passes` times, so the engines timed
    after it all start on a JVM that has compiled the connector's read path (the Kafka consumer,
    the rows it builds), which they share. Without it the first engine timed pays that compile
    for the others: 1M records read (to no sink) took 3.0 s cold against 1.25-1.3 s warm here."""
    from streamjoin.kafka import admin
    from streamjoin.kafka.records import OutRecord

    topic = bench.name("warmup_source")
    admin.create_topics(bench.bootstrap, {topic: 2})
    admin.produce(bench.bootstrap, topic, (OutRecord(b"k%d" % n, b'{"amount": %d}' % n, BASE_TS + n)
                                           for n in range(records)))
    for _ in range(passes):
        (bench.spark.read.format("kafka").option("kafka.bootstrap.servers", bench.bootstrap).option("subscribe", topic)
         .option("includeHeaders", "true").load().write.format("noop").mode("overwrite").save())


# --- streaming == batch -------------------------------------------------------------------------

@dataclass(frozen=True)
class Agreement:
    """A streaming run's output against the same compiled query run in batch mode (a backfill)
    over the same inputs, as multisets of (key, value)."""

    streaming: Counter  # (key, value) -> count: the streaming run's output, replayed copies dropped
    batch: Counter
    seconds: float  # the batch run and reading the streaming output back

    @property
    def same(self) -> bool:
        return self.streaming == self.batch

    def line(self) -> str:
        counts = f"{sum(self.streaming.values()):,} streaming vs {sum(self.batch.values()):,} batch records"
        if self.same:
            return f"streaming == batch: same ({sum(self.batch.values()):,} records; checked in {self.seconds:,.1f} s)"
        return (f"streaming == batch: DIFFERENT: {counts}; {sum((self.streaming - self.batch).values()):,} only in "
                f"streaming, {sum((self.batch - self.streaming).values()):,} only in batch")


def output_records(bench: Bench, topic: str) -> Counter:
    """Every (key, value) a streaming run wrote to `topic`, the replayed copies (the at-least-once
    sink's) dropped."""
    from streamjoin.kafka import admin
    from streamjoin.kafka.records import dedupe_replayed

    return Counter((r.key, r.value) for r in dedupe_replayed(admin.read_all(bench.bootstrap, topic)))


def streaming_vs_batch(bench: Bench, queries) -> Agreement:
    """Run each sub-topology again in batch mode over the inputs its streaming run read and
    compare with what that run wrote (the join's output, and any repartition topic's)."""
    from streamjoin.settings import Settings
    from streamjoin.spark.batch import run_batch
    from streamjoin.spark.query import task_processor, task_routing

    started = time.perf_counter()
    streaming, batch = Counter(), Counter()
    for sub in queries:
        table = run_batch(bench.spark, task_processor(sub), sub.input_topics,
                          {"kafka.bootstrap.servers": bench.bootstrap}, routing=task_routing(sub, bench.client_config),
                          source=Settings.from_env().kafka_source)
        batch.update(zip(table.column("key").to_pylist(), table.column("value").to_pylist()))
        streaming.update(output_records(bench, sub.sink.topic))
    return Agreement(streaming, batch, time.perf_counter() - started)


# --- the PyFlink peer ----------------------------------------------------------------------------

def run_pyflink(bench: Bench, workload: str, inputs: list[str], output: str, records_in: int) -> Timed | str:
    """bench/pyflink_peer.py under .venv-flink, reading `inputs` and writing `output` (created
    here) with Flink's Kafka connector: its Timed, or why it did not run."""
    from streamjoin.kafka import admin
    from streamjoin.maven import FetchError, resolve

    if not FLINK_PYTHON.exists():
        return f"not run: {FLINK_PYTHON.parent.parent} is missing (make flink-venv)"
    try:
        jars = resolve(FLINK_KAFKA)
    except FetchError as error:
        return f"not run: {error}"
    admin.create_topics(bench.bootstrap, {output: 2})
    # Spark's variables mean nothing to Flink; the rest of the environment (PATH: java) stays.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK"))}
    done = subprocess.run([str(FLINK_PYTHON), str(BENCH_DIR / "pyflink_peer.py"), workload,
                           "--bootstrap", bench.bootstrap, "--inputs", ",".join(inputs), "--output", output,
                           "--jars", ",".join(map(str, jars))], capture_output=True, text=True, env=env)
    lines = done.stdout.strip().splitlines()
    if done.returncode or not lines:
        errors = done.stderr.strip().splitlines() or ["no output"]
        causes = [line for line in errors if line.startswith("Caused by:")]  # a Java trace's root cause last
        return f"failed (exit {done.returncode}): {(causes or errors)[-1][:300]}"
    return Timed(records_in, topic_count(bench, output), json.loads(lines[-1])["seconds"])


def json_rows(records: Counter) -> Counter:
    """Kafka (key, JSON value) records as `json_row`s."""
    rows = Counter()
    for (key, value), count in records.items():
        rows[json_row(None if key is None else key.decode(), json.loads(value))] += count
    return rows


def json_row(key, fields: dict) -> tuple:
    """A joined row as the engines agree on it: field names in lower case (ksqlDB upper-cases
    them, Flink does not), null fields left out (Spark's to_json drops them, Flink writes them)."""
    return key, tuple(sorted((name.lower(), value) for name, value in fields.items() if value is not None))


def row_differences(rows: dict[str, Counter]) -> str:
    """Each engine's rows against the first's: 'same', or how many differ each way with an example."""
    def described(differing: Counter) -> str:
        return f"{sum(differing.values()):,}, e.g. {str(next(iter(differing), '-'))[:120]}"

    (first, reference), *others = rows.items()
    found = []
    for name, theirs in others:
        if theirs == reference:
            found.append(f"{name} same")
        else:
            found.append(f"{name} DIFFERENT (only in {first}'s: {described(reference - theirs)}; "
                         f"only in {name}'s: {described(theirs - reference)})")
    return f"rows vs {first}'s: " + "; ".join(found)


# --- memory of Spark's Python workers ------------------------------------------------------------

@dataclass
class WorkerMemory:
    """Peak memory of the Python processes Spark started for this driver (`pyspark.daemon`s, the
    workers they fork, the streaming source runner...): /proc/<pid>/status sampled from a thread
    every `interval` s while the block runs. Only this process's descendants count (other Spark
    sessions on the machine are not ours). Per kind of process: the largest VmHWM (a process's
    own high-water mark: exact, but a reused worker's also covers earlier runs of the session);
    and the largest sum of VmRSS over all of them at one sample (pages a forked worker shares
    with its daemon are counted in each)."""

    interval: float = 0.2
    peak_total: int = 0  # bytes
    kinds: dict = field(default_factory=dict)  # kind -> [peak VmHWM bytes, {pids}]
    _stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> "WorkerMemory":
        self._thread = threading.Thread(target=self._run, daemon=True, name="worker-memory")
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        total = 0
        for pid, kind in python_workers(os.getpid()).items():
            status = _status_kb(pid)
            if not status:
                continue  # ended between the listing and the read
            total += status.get("VmRSS", 0) * 1024
            peak = self.kinds.setdefault(kind, [0, set()])
            peak[0] = max(peak[0], status.get("VmHWM", 0) * 1024)
            peak[1].add(pid)
        self.peak_total = max(self.peak_total, total)

    def line(self) -> str:
        if not self.kinds:
            return "Python workers: none seen"
        kinds = sorted(self.kinds.items(), key=lambda kv: -kv[1][0])
        top, (peak, _) = kinds[0]
        return (f"Python workers: peak RSS {mb(peak)} in one process ({top}), {mb(self.peak_total)} all together; "
                f"per kind (VmHWM, processes): " + ", ".join(f"{kind} {mb(hwm)} x{len(pids)}"
                                                              for kind, (hwm, pids) in kinds))


def python_workers(root: int) -> dict[int, str]:
    """{pid: kind} of the Python processes below `root` (the JVM's children and theirs) that run
    a pyspark module; kind = the module's last name ("worker", "python_streaming_source_runner",
    ...), "daemon" for a `pyspark.daemon` that forks them."""
    children = _children()
    found: dict[int, str] = {}
    stack = [(pid, root) for pid in children.get(root, [])]
    while stack:
        pid, parent = stack.pop()
        stack.extend((child, pid) for child in children.get(pid, []))
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        modules = [a for a in argv if a.startswith("pyspark")]
        if not argv or "java" in os.path.basename(argv[0]) or not modules:
            continue
        forks = "pyspark.daemon" in modules and parent not in found  # a daemon, not a worker it forked
        found[pid] = "daemon" if forks else modules[-1].rsplit(".", 1)[-1]
    return found


def _children() -> dict[int, list[int]]:
    """{parent pid: child pids} of every process now."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    return children


def cpu_seconds(root: int) -> float:
    """CPU time (user + system) used so far by `root` and the processes below it now (the JVM,
    the Python workers, the broker): the difference over a window is what the bench cost."""
    children, total, stack = _children(), 0, [root]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
        except (OSError, IndexError, ValueError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def _status_kb(pid: int) -> dict[str, int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            return {k: int(v.split()[0]) for k, v in (line.split(":", 1) for line in f)
                    if k in ("VmRSS", "VmHWM")}
    except (OSError, ValueError):
        return {}


def percentiles(values: list[float], points=(50, 95, 99)) -> dict[str, float]:
    """Nearest-rank percentiles and the max of `values` (non-empty)."""
    ordered = sorted(values)
    result = {f"p{p}": ordered[min(len(ordered) - 1, max(0, -(-p * len(ordered) // 100) - 1))] for p in points}
    result["max"] = ordered[-1]
    return result


@dataclass(frozen=True)
class StateSize:
    runtimes: int  # the pickled task runtimes without their stores
    pages: int  # the stores' key-group pages
    page_count: int
    on_disk: int  # the checkpoint's state directory: RocksDB files of every retained version

    def line(self) -> str:
        return (f"state: {mb(self.runtimes)} pickled runtimes + {mb(self.pages)} in {self.page_count:,} "
                f"key-group pages (last committed); {mb(self.on_disk)} checkpoint state dir on disk")


def state_size(spark, checkpoint: Path) -> StateSize:
    """The tasks' state as last committed, read back with Spark's state data source: one map state
    a task, its pickled runtime under `RUNTIME_KEY` beside the stores' key-group pages."""
    from pyspark.sql import functions as F

    from streamjoin.spark.adapter import RUNTIME_KEY, TASK_STATE

    state = spark.read.format("statestore").option("stateVarName", TASK_STATE).load(str(checkpoint))
    runtime, size = F.col("user_map_key.store") == RUNTIME_KEY[0], F.length("user_map_value.data")
    runtimes, pages, count = state.select(F.sum(F.when(runtime, size)), F.sum(F.when(~runtime, size)),
                                          F.count(F.when(~runtime, 1))).first()
    on_disk = sum(f.stat().st_size for f in (checkpoint / "state").rglob("*") if f.is_file())
    return StateSize(int(runtimes or 0), int(pages or 0), int(count), on_disk)


@dataclass(frozen=True)
class Measured:
    """A streamjoin run with its Python workers' memory and the state it left."""

    timed: Timed
    memory: WorkerMemory
    state: StateSize


def measured_streamjoin(bench: Bench, queries) -> Measured:
    """`run_streamjoin` (Kafka to Kafka) with the workers' memory sampled throughout, then the
    tasks' state as the run committed it."""
    with WorkerMemory() as memory:
        timed, checkpoints = run_streamjoin(bench, queries)
    return Measured(timed, memory, state_size(bench.spark, checkpoints[-1]))


def mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"
