"""Shared plumbing for the join benchmarks: a private broker + Spark session, a ksqlDB query
planned and compiled by streamjoin, inputs encoded with each source's serde, timed runs, and the
size of the tasks' state.

Every run uses fresh topic names (a per-run suffix), so reruns never see old records.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

BASE_TS = 1_700_000_000_000
DRIVER_MEMORY = "4g"


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


def compile_query(sql: str, sources: list[dict]):
    """The sub-topologies (upstream first) of the one ksqlDB query in `sql`, and its catalog."""
    from streamjoin.plan.catalog import Catalog
    from streamjoin.plan import plan_program
    from streamjoin.plan.rewrites import split_repartitions
    from streamjoin.runtime.compiled import CompiledQuery

    catalog = Catalog.from_case_sources(sources)
    (query,) = plan_program(sql, catalog, "ksqldb").queries
    return [CompiledQuery(sub, "ksqldb") for sub in split_repartitions(query.root)], catalog


def create_topics(bench: Bench, queries) -> None:
    from streamjoin.kafka import admin

    partitions: dict[str, int] = {}
    for query in queries:
        partitions.update(query.topic_partitions())
    admin.create_topics(bench.bootstrap, partitions)


def produce(bench: Bench, catalog, source: str, rows: Iterable[tuple[object, dict | None, int]]) -> int:
    """Encode (key, value, ts) rows with `source`'s serde, partitioned as Kafka would, and send."""
    from streamjoin.runtime.compiler import source_serde
    from streamjoin.kafka.producer import bulk_producer, send_all
    from streamjoin.kafka.records import place

    definition = catalog.get(source)
    serde = source_serde(definition)
    placed = (place(definition.topic, definition.partitions, serde, key, value, ts, n)
              for n, (key, value, ts) in enumerate(rows))
    producer = bulk_producer(bench.client_config)
    try:
        return send_all(producer, ((p.topic, p.record) for p in placed))
    finally:
        producer.close()


def topic_count(bench: Bench, topic: str) -> int:
    from streamjoin.kafka import admin

    return sum(admin.end_offsets(bench.bootstrap, topic).values())


@dataclass(frozen=True)
class Timed:
    input_records: int
    output_records: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.input_records / self.seconds


def run_streamjoin(bench: Bench, queries) -> tuple[Timed, list[Path]]:
    """Run the sub-topologies in order (availableNow, Kafka to Kafka); the rate counts the
    records read by the last one (the join) over the wall time of all of them."""
    from streamjoin.spark.query import run_available

    started = time.perf_counter()
    checkpoints = []
    for query in queries:
        checkpoints.append(bench.work_dir / "checkpoints" / query.name)
        report = run_available(bench.spark, query, {"kafka.bootstrap.servers": bench.bootstrap}, bench.client_config,
                               checkpoints[-1])
    elapsed = time.perf_counter() - started
    return Timed(report.input_rows, topic_count(bench, queries[-1].sink.topic), elapsed), checkpoints


def warm_up(bench: Bench) -> None:
    """Start the Python workers once, so the first measured query does not pay for it."""
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


@dataclass(frozen=True)
class StateSize:
    runtimes: int  # the pickled task runtimes without their stores
    pages: int  # the stores' key-group pages
    page_count: int
    on_disk: int  # the checkpoint's state directory: RocksDB files of every retained version


def state_size(spark, checkpoint: Path) -> StateSize:
    """The tasks' state as last committed, read back with Spark's state data source."""
    from pyspark.sql import functions as F

    def var(name: str):
        return spark.read.format("statestore").option("stateVarName", name).load(str(checkpoint))

    runtimes = var("runtime").select(F.sum(F.length("value.runtime"))).first()[0] or 0
    pages, count = var("pages").select(F.sum(F.length("user_map_value.data")), F.count("*")).first()
    on_disk = sum(f.stat().st_size for f in (checkpoint / "state").rglob("*") if f.is_file())
    return StateSize(int(runtimes), int(pages or 0), int(count), on_disk)


def mb(size: int) -> str:
    return f"{size / 1e6:,.1f} MB"
