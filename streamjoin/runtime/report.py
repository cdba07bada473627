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
    driver_rows: int = 0  # rows the driver took from the batches: the tasks' figures, never a result
    extra: dict = field(default_factory=dict)
    # Where the time went, seconds per stage: the tasks' (summed over tasks: ordering, decode,
    # operators, encode, state reads and writes), the driver's per batch (collect = the Spark job
    # that reads Kafka and runs the tasks; produce; delta) and Spark's own (planning, offsets,
    # commits), for profiles (bench/).
    seconds: dict = field(default_factory=dict)

    def add_seconds(self, stages: dict) -> None:
        for stage, value in stages.items():
            self.seconds[stage] = self.seconds.get(stage, 0.0) + value

    def add_batch(self, batch: dict, stream_times: dict[int, int]) -> None:
        """One micro-batch's figures (JSON: what the batch's writer measured, and each task's
        figures under "tasks"). `stream_times` (task -> stream time) carries over batches: the
        watermark shown is the smallest over tasks, since no task is behind it."""
        for task in batch["tasks"]:
            if task["stream_time"] is not None:
                stream_times[task["task"]] = task["stream_time"]
                self.watermark_ms = min(stream_times.values())
            counts = task["counts"]
            self.input_rows += counts.get("input_records", 0)
            self.late_records += counts.get("late", 0)
            self.dropped_records += counts.get("null_key", 0) + counts.get("null_value", 0)
            self.dead_letters += counts.get("dead_letters", 0)
            self.add_seconds({f"task.{stage}": value for stage, value in task.get("seconds", {}).items()})
            for name, value in counts.items():
                self.extra[name] = self.extra.get(name, 0) + value
        # A result its topic or the Delta table refuses is a dead letter the task counted itself.
        self.driver_rows += batch.get("driver_rows", 0)
        if batch["delta_version"] is not None:
            self.delta_version = batch["delta_version"]
        self.add_seconds(batch["seconds"])
        self.output_rows += batch["output_rows"]
        self.batches += 1
        self.batch_duration_ms = int(sum(batch["seconds"].values()) * 1000)


class Laps:
    """Seconds since the previous lap, per named lap: `lap("decode")` closes a lap."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.last = perf_counter()

    def __call__(self, name: str) -> None:
        now = perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - self.last
        self.last = now
