"""Test data for the Dagster layer: a SqlProject built by hand from the engine's dataclasses
(independent of the compiler), a fake engine that records the calls the layer makes, and the
resources that hand it out in place of the real `Engine`."""

import dataclasses
from pathlib import Path

from dagster_pyspark import LazyPySparkResource

from resources import EngineResource
from streamjoin.app.engine import Engine
from streamjoin.app.project import Query, SourceSpec, SqlProject
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


def _no_spark():
    raise AssertionError("the fake engine never starts Spark")


class FakeEngine(Engine):
    """Stands in for `Engine`: records the calls the Dagster layer makes and returns fixed
    reports. Paths (`delta_path`, ...) are the real Engine's, from the settings of the resource
    that handed it out."""

    def __init__(self, lag: int = 0, fail_runs: bool = False, dead_letters: int = 0,
                 on_backfill=None) -> None:
        super().__init__(Settings(), spark=_no_spark)
        self.lag, self.fail_runs, self.dead_letters = lag, fail_runs, dead_letters
        self.on_backfill = on_backfill  # called with the query: what the batch recomputation writes
        self.calls: list = []
        self.data_loss_policies: list = []  # on_data_loss of each run, as the asset passed it

    def run(self, query, mode=None, stop_after_s=None, on_progress=None, on_data_loss=None):
        self.calls.append(("run", query.name, mode))
        self.data_loss_policies.append(on_data_loss)
        if self.fail_runs:
            raise RuntimeError("query crashed")
        report = RunReport(query=query.name, input_rows=10, output_rows=7, rows_per_second=100.0,
                           batch_duration_ms=50, batches=1, watermark_ms=1_000, late_records=1,
                           dropped_records=2, dead_letters=self.dead_letters,
                           output_topic=query.output_topic, delta_path=self.delta_path(query),
                           delta_version=3)
        if on_progress:
            on_progress(report)
        return report

    def backfill(self, query, start_ms, end_ms):
        self.calls.append(("backfill", query.name, start_ms, end_ms))
        if self.on_backfill:
            self.on_backfill(query)
        return RunReport(query=query.name, output_rows=5, output_topic=query.output_topic,
                         delta_path=self.delta_path(query))

    def consumer_lag(self, query):
        self.calls.append(("consumer_lag", query.name))
        return self.lag

    def copartitioning_problems(self, query):
        return []

    def reset(self, query):
        self.calls.append(("reset", query.name))


def fake_resources(fake: FakeEngine, **config) -> dict:
    """Resources whose `engine` hands out `fake` (configured with the resource's settings, as
    the real EngineResource configures the real Engine). `config`: EngineResource fields."""

    class FakeEngineResource(EngineResource):
        def get_engine(self) -> Engine:
            fake.settings = self.settings()
            return fake

    spark = LazyPySparkResource(spark_config={})  # never asked for a session
    return {"engine": FakeEngineResource(spark=spark, **config), "spark": spark}


from tests.paths import REPO  # noqa: E402
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
