"""Test data for the Dagster layer: a SqlProject built by hand from the engine's dataclasses
(independent of the compiler), a fake engine that records the calls the layer makes, and the
resources that hand it out in place of the real `Engine`."""

import dataclasses
import threading
import time
import types
from pathlib import Path

from dagster_pyspark import LazyPySparkResource

from resources import EngineResource
from streamjoin.app.engine import Engine
from streamjoin.app.project import Query, SourceSpec, SqlProject
from streamjoin.app.status import PartitionLag, QueryFigures
from streamjoin.app.windows import WindowScan
from streamjoin.runtime.report import RunReport
from streamjoin.settings import Settings


def hand_project(root: Path) -> SqlProject:
    """Two folders: a stream-table join that repartitions `clicks`, and a PARTITION BY query."""
    sources = (SourceSpec("clicks", "stream", "clickstream", 2),
               SourceSpec("click_users", "table", "click_users", 2),
               SourceSpec("products", "stream", "products", 1))
    join = Query(
        name="clicks_enriched", group="ksqldb", path=root / "ksqldb" / "clicks_enriched.sql",
        sql="CREATE STREAM clicks_enriched AS SELECT clicks.url, users.fullName FROM clicks "
            "JOIN click_users users ON clicks.userId = users.userId EMIT CHANGES;",
        dialect="ksqldb", explain="Join[inner]\n  Repartition[clicks by userId]\n  Source[users]",
        source_names=("clicks", "click_users"), source_topics=("clickstream", "click_users"),
        repartition_topics=("clicks_enriched-clicks-repartition",),
        repartition_inputs=(("clicks_enriched-clicks-repartition", ("clickstream",)),),
        output_topic="clicks_enriched", output_kind="stream")
    rekey = Query(
        name="products_rekeyed", group="ksqldb", path=root / "ksqldb" / "products_rekeyed.sql",
        sql="CREATE STREAM products_rekeyed AS SELECT * FROM products PARTITION BY product_id;",
        dialect="ksqldb", explain="Repartition[products by product_id]",
        source_names=("products",), source_topics=("products",), repartition_topics=(),
        output_topic="products_rekeyed", output_kind="stream", schedule="*/5 * * * *",
        is_repartition=True)
    return SqlProject(root=root, sources=sources, queries=(join, rekey))


def changed_sql(project: SqlProject, name: str = "clicks_enriched") -> SqlProject:
    """The project as the code location loads it after an incompatible edit of `name`'s file
    (LEFT instead of INNER join): a new topology, so a new state fingerprint."""
    queries = tuple(dataclasses.replace(q, sql=q.sql.replace(" JOIN ", " LEFT JOIN "),
                                        explain=q.explain.replace("[inner]", "[left]"))
                    if q.name == name else q for q in project.queries)
    return dataclasses.replace(project, queries=queries)


class FakeStream:
    """Stands in for a Spark StreamingQuery of a continuous fake run (what a stop drains)."""

    def __init__(self, name: str) -> None:
        self.name, self.stopped = name, threading.Event()
        self.status = {"isTriggerActive": False}
        self.lastProgress = {"batchId": 4, "sources": [{"endOffset": '{"clickstream": {"0": 9}}'}]}

    @property
    def isActive(self) -> bool:
        return not self.stopped.is_set()

    def stop(self) -> None:
        self.stopped.set()


class FakeSpark:
    """What the Dagster layer asks of a session: the active streams (to stop them)."""

    def __init__(self) -> None:
        self.streams = types.SimpleNamespace(active=[])


class FakeEngine(Engine):
    """Stands in for `Engine`: records the calls the Dagster layer makes and returns fixed
    reports. Paths (`delta_path`, ...) are the real Engine's, from the settings of the resource
    that handed it out. `rows`: what a run appends to the query's Delta table; `run_s`: how long
    an available_now run takes; a continuous run lasts until its stream is stopped (or
    `stop_after_s`). `input_rows`: the records a run reports it read. `records`: {topic: newest
    records} for the previews; `offsets`: {topic: end offsets} (default one empty partition; {}:
    the topic does not exist)."""

    def __init__(self, lag: int = 0, fail_runs: bool = False, dead_letters: int = 0,
                 on_backfill=None, rows: list[dict] | None = None, run_s: float = 0.0,
                 input_rows: int = 10, offsets: dict[str, dict[int, int]] | None = None) -> None:
        super().__init__(Settings(), spark=FakeSpark())
        self.lag, self.fail_runs, self.dead_letters = lag, fail_runs, dead_letters
        self.on_backfill = on_backfill  # called with the query: what the batch recomputation writes
        self.rows, self.run_s, self.input_rows = rows or [], run_s, input_rows
        self.records: dict[str, list[dict]] = {}
        self.windows: dict[int, int] = {}  # {window start ms: records} the input data is in
        self.offsets: dict[str, dict[int, int]] = offsets or {}
        self.calls: list = []
        self.data_loss_policies: list = []  # on_data_loss of each run, as the asset passed it

    def run(self, query, mode=None, stop_after_s=None, on_progress=None, on_data_loss=None):
        self.calls.append(("run", query.name, mode) + ((on_data_loss,) if on_data_loss else ()))
        self.data_loss_policies.append(on_data_loss)
        if self.fail_runs:
            raise RuntimeError("query crashed")
        report = RunReport(query=query.name, input_rows=self.input_rows, output_rows=7,
                           rows_per_second=100.0, batch_duration_ms=50,
                           batches=1 if self.input_rows else 0,  # nothing read: no batch ran
                           watermark_ms=1_000, late_records=1,
                           dropped_records=2, dead_letters=self.dead_letters,
                           output_topic=query.output_topic, delta_path=self.delta_path(query),
                           delta_version=3)
        if self.rows:
            import pyarrow as pa
            from deltalake import write_deltalake
            write_deltalake(self.delta_path(query), pa.Table.from_pylist(self.rows), mode="append")
        if on_progress:
            on_progress(report)
        if mode == "continuous":
            stream = FakeStream(query.name)
            self.spark.streams.active.append(stream)
            stream.stopped.wait(stop_after_s)
            self.spark.streams.active.remove(stream)
        else:
            time.sleep(self.run_s)
        return report

    def output_notice(self, query):
        return f"{query.name}: Kafka output is exactly-once (no brokers here: a fixed line)"

    def backfill(self, query, start_ms, end_ms):
        self.calls.append(("backfill", query.name, start_ms, end_ms))
        if self.on_backfill:
            self.on_backfill(query)
        return RunReport(query=query.name, output_rows=5, output_topic=query.output_topic,
                         delta_path=self.delta_path(query))

    def consumer_lag(self, query):
        self.calls.append(("consumer_lag", query.name))
        if isinstance(self.lag, Exception):  # what the real one raises (DataLossError, ...)
            raise self.lag
        return self.lag

    def copartitioning_problems(self, query):
        return []

    def reset(self, query):
        self.calls.append(("reset", query.name))


def fake_resources(fake: FakeEngine, **config) -> dict:
    """Resources whose `engine` hands out `fake` (configured with the resource's settings, as
    the real EngineResource configures the real Engine), and answers the topic questions from
    it. `config`: EngineResource fields."""

    class FakeEngineResource(EngineResource):
        def get_engine(self) -> Engine:
            fake.settings = self.settings()
            return fake

        def end_offsets(self, topic: str) -> dict[int, int]:
            return fake.offsets.get(topic, {0: 0})

        def describe_topics(self, topics: list[str]) -> dict[str, dict]:
            # Like the real one: topics that do not exist (no partitions) are left out.
            return {topic: {"partitions": len(self.end_offsets(topic)),
                            "end_offsets": self.end_offsets(topic)} for topic in topics
                    if self.end_offsets(topic)}

        def latest_records(self, topic: str, limit: int = 10, query=None) -> list[dict]:
            return fake.records.get(topic, [])[:limit]

        def latest_dead_letters(self, query, limit: int = 10) -> list[dict]:
            return fake.records.get(fake.dead_letter_topic(query), [])[:limit]

        def scan_windows(self, topics: list[str], positions: dict[str, int],
                         window_ms: int) -> WindowScan:
            """The fake's `windows` ({window start ms: records}) once, on the first scan."""
            first = not positions
            return WindowScan(dict(fake.windows) if first else {}, {"scanned/0": 1})

        def figures(self, query) -> QueryFigures:
            """The fake's lag on one partition of the query's first source topic."""
            lag = fake.consumer_lag(query)
            end = sum(fake.offsets.get(query.source_topics[0], {0: lag}).values())
            return QueryFigures((PartitionLag(query.source_topics[0], 0, end - lag, end),), 0, None,
                                None, 0, fake.dead_letters)

    spark = LazyPySparkResource(spark_config={})  # never asked for a session
    return {"engine": FakeEngineResource(spark=spark, **config), "spark": spark}


from tests.paths import REPO

DAY_MS = 86_400_000
# The sample records (1970 timestamps) moved to two days the backfill partitions can hold.
FIRST_DAY = "2026-11-19"
FIRST_DAY_MS = 1_795_046_400_000  # 2026-11-19T00:00:00Z


def produce_shifted_samples(bootstrap: str, samples_dir: Path, folder: str,
                            sources: tuple[str, ...], split_source: str | None = None) -> None:
    """Produce samples/<folder>/<source>.jsonl for `sources` with timestamps moved to FIRST_DAY;
    the second half of `split_source`'s records go to the day after (one per backfill partition).
    Topics already holding records are left alone (the demo's rule): once per broker."""
    import json

    from streamjoin.app.samples import produce_samples

    target = samples_dir / folder
    target.mkdir(parents=True, exist_ok=True)
    for source in sources:
        rows = [json.loads(line) for line in
                (REPO / "samples" / folder / f"{source}.jsonl").read_text().splitlines() if line]
        for i, row in enumerate(rows):
            later = source == split_source and i >= len(rows) // 2
            row["ts"] += FIRST_DAY_MS + (DAY_MS if later else 0)
        (target / f"{source}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    produce_samples(REPO / "sql", samples_dir, bootstrap, Settings.from_env())
