"""Test data for the Dagster layer: a Project built by hand from the façade's dataclasses
(independent of the compiler) and a fake engine that records the calls the layer makes."""

from dataclasses import dataclass, field
from pathlib import Path

from streamjoin import project as facade
from streamjoin.project import Project, QuerySpec, RunReport, SourceSpec

FACADE_OPERATIONS = ("run_query", "backfill", "state_fingerprint", "consumer_lag",
                     "copartitioning_problems", "reset")


def hand_project(root: Path) -> Project:
    """Two folders: a stream-table join that repartitions `clicks`, and a PARTITION BY query."""
    sources = (SourceSpec("clicks", "stream", "clickstream", 2),
               SourceSpec("click_users", "table", "click_users", 2),
               SourceSpec("products", "stream", "products", 1))
    join = QuerySpec(
        name="clicks_enriched", group="ksqldb", path=root / "ksqldb" / "clicks_enriched.sql",
        sql="CREATE STREAM clicks_enriched AS SELECT clicks.url, users.fullName FROM clicks "
            "JOIN click_users users ON clicks.userId = users.userId EMIT CHANGES;",
        dialect="ksqldb", explain="Join[inner]\n  Repartition[clicks by userId]\n  Source[users]",
        source_names=("clicks", "click_users"), source_topics=("clickstream", "click_users"),
        repartition_topics=("clicks_enriched-clicks-repartition",),
        repartition_inputs=(("clicks_enriched-clicks-repartition", ("clickstream",)),),
        output_topic="clicks_enriched", output_kind="stream",
        delta_path=str(root / "delta" / "clicks_enriched"))
    rekey = QuerySpec(
        name="products_rekeyed", group="ksqldb", path=root / "ksqldb" / "products_rekeyed.sql",
        sql="CREATE STREAM products_rekeyed AS SELECT * FROM products PARTITION BY product_id;",
        dialect="ksqldb", explain="Repartition[products by product_id]",
        source_names=("products",), source_topics=("products",), repartition_topics=(),
        output_topic="products_rekeyed", output_kind="stream",
        delta_path=str(root / "delta" / "products_rekeyed"), schedule="*/5 * * * *",
        is_repartition=True)
    return Project(root=root, sources=sources, queries=(join, rekey))


@dataclass
class FakeEngine:
    """Stands in for the façade operations; records the calls the Dagster layer makes."""

    lag: int = 0
    fingerprint: str = "fp-1"
    fail_runs: bool = False
    dead_letters: int = 0
    on_backfill: object = None  # called with the spec: what the batch recomputation writes
    calls: list = field(default_factory=list)

    def run_query(self, spec, *, mode=None, stop_after_s=None, on_progress=None):
        self.calls.append(("run_query", spec.name, mode))
        if self.fail_runs:
            raise RuntimeError("query crashed")
        report = RunReport(query=spec.name, input_rows=10, output_rows=7, rows_per_second=100.0,
                           batch_duration_ms=50, batches=1, watermark_ms=1_000, late_records=1,
                           dropped_records=2, dead_letters=self.dead_letters,
                           output_topic=spec.output_topic, delta_path=spec.delta_path,
                           delta_version=3)
        if on_progress:
            on_progress(report)
        return report

    def backfill(self, spec, start_ms, end_ms):
        self.calls.append(("backfill", spec.name, start_ms, end_ms))
        if self.on_backfill:
            self.on_backfill(spec)
        return RunReport(query=spec.name, output_rows=5, output_topic=spec.output_topic,
                         delta_path=spec.delta_path)

    def state_fingerprint(self, spec):
        return self.fingerprint

    def consumer_lag(self, spec):
        self.calls.append(("consumer_lag", spec.name))
        return self.lag

    def copartitioning_problems(self, spec):
        return []

    def reset(self, spec):
        self.calls.append(("reset", spec.name))


def install(fake: FakeEngine, setattr_=setattr) -> None:
    """Replace the façade operations by the fake's (setattr_: e.g. pytest's monkeypatch)."""
    for name in FACADE_OPERATIONS:
        setattr_(facade, name, getattr(fake, name))


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

    from streamjoin.settings import Settings
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
