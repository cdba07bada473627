"""What one run of a query did: the figures a driver accumulates per batch and an orchestrator
records (Dagster metadata, the demo's summary)."""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter


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
    # Where the time went, seconds per stage: the tasks' (summed over tasks: ordering, decode,
    # operators, encode, state reads and writes), the driver's per batch (collect = the Spark job
    # that reads Kafka and runs the tasks; produce; delta) and Spark's own (planning, offsets,
    # commits), for profiles (bench/).
    seconds: dict = field(default_factory=dict)

    def add_seconds(self, stages: dict) -> None:
        for stage, value in stages.items():
            self.seconds[stage] = self.seconds.get(stage, 0.0) + value


class Laps:
    """Seconds since the previous lap, per named lap: `lap("decode")` closes a lap."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.last = perf_counter()

    def __call__(self, name: str) -> None:
        now = perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.last
        self.last = now
