"""The engine's façade for orchestrators: what a `sql/` folder holds and how to run one query.

The Dagster layer (assets/, jobs/, resources/) calls only this module (and `streamjoin.config`),
never the compiler or Spark adapter directly, so the engine stays free of dagster.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class SourceSpec:
    """A declared input relation (from sql/sources.sql) and the topic behind it."""

    name: str
    kind: str  # stream | table | versioned_table
    topic: str
    partitions: int


@dataclass(frozen=True)
class QuerySpec:
    """One query file of `sql/`: one asset.

    `name` is the file stem (the asset key), `group` the folder below sql/ ("default" at the top).
    `mode` is `available_now` (default) or `continuous`, from a `-- mode:` header comment;
    `schedule` is a cron string from a `-- schedule:` header comment (PARTITION BY jobs).
    """

    name: str
    group: str
    path: Path
    sql: str
    dialect: str
    explain: str
    source_names: tuple[str, ...]
    source_topics: tuple[str, ...]
    repartition_topics: tuple[str, ...]
    output_topic: str
    output_kind: str  # stream | table
    delta_path: str
    mode: str = "available_now"
    schedule: str | None = None
    is_repartition: bool = False  # a standalone PARTITION BY statement
    repartition_inputs: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (internal topic, topics it re-keys)

    @property
    def code_version(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Project:
    root: Path
    sources: tuple[SourceSpec, ...]
    queries: tuple[QuerySpec, ...]

    def query(self, name: str) -> QuerySpec:
        for q in self.queries:
            if q.name == name:
                return q
        raise KeyError(f"no query named {name!r} in {self.root}")


@dataclass
class RunReport:
    """What one run of a query did: numeric figures the orchestrator records as metadata."""

    query: str
    input_rows: int = 0
    output_rows: int = 0
    rows_per_second: float = 0.0
    batch_duration_ms: int = 0
    batches: int = 0
    watermark_ms: int | None = None
    late_records: int = 0
    dropped_records: int = 0  # null key / null value records the join ignored
    dead_letters: int = 0
    consumer_lag: int = 0
    output_topic: str = ""
    delta_path: str = ""
    delta_version: int | None = None
    extra: dict = field(default_factory=dict)


# --- Operations (implemented in streamjoin.execution, imported lazily: it needs Spark). --------


def load_project(sql_dir: Path) -> Project:
    """Parse and plan every file below `sql_dir` (sources.sql declares a folder's inputs; every
    other .sql file is one query). Raises the planner's error (file, line, column, snippet) for a
    broken file — never skips it."""
    from streamjoin.sqlproject import load_project as load

    return load(sql_dir)


def run_query(spec: QuerySpec, *, mode: str | None = None, stop_after_s: float | None = None,
              on_progress=None) -> RunReport:
    """Run one query from its checkpoint: `available_now` processes everything new then stops;
    `continuous` runs with a processing-time trigger until `stop_after_s` (or until stopped),
    calling `on_progress(RunReport)` after each batch."""
    from streamjoin import execution

    return execution.run_query(spec, mode=mode, stop_after_s=stop_after_s, on_progress=on_progress)


def backfill(spec: QuerySpec, start_ms: int, end_ms: int) -> RunReport:
    """Recompute [start_ms, end_ms) with the same plan in batch mode and replace that time range
    in the query's Delta table."""
    from streamjoin import execution

    return execution.backfill(spec, start_ms, end_ms)


def copartitioning_problems(spec: QuerySpec) -> list[str]:
    """Human-readable problems with the co-partitioning of the query's join inputs ([] if none)."""
    from streamjoin import execution

    return execution.copartitioning_problems(spec)


def consumer_lag(spec: QuerySpec) -> int:
    """End offsets of the input topics minus the offsets in the query's checkpoint."""
    from streamjoin import execution

    return execution.consumer_lag(spec)


def state_fingerprint(spec: QuerySpec) -> str:
    """Identifies the state layout of the compiled query: when it changes, the checkpoint is
    incompatible and the query needs a reset + backfill instead of a restart."""
    from streamjoin import execution

    return execution.state_fingerprint(spec)


def reset(spec: QuerySpec) -> None:
    """Delete the query's checkpoint and output table so the next run starts from the beginning."""
    from streamjoin import execution

    execution.reset(spec)
