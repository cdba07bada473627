"""What one run of a query did: the figures a driver accumulates per batch and an orchestrator
records (Dagster metadata, the demo's summary)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
