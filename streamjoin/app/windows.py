"""Which time windows hold input data: the record timestamps of a query's source topics, read
incrementally (from where the last scan ended), counted per window of `window_ms`. The Dagster
layer offers a backfill partition for each window that holds data, rather than every window since
a fixed date (daily windows since 1970 were 20,786 partitions)."""

from __future__ import annotations

import dataclasses

from streamjoin.app.engine import Engine
from streamjoin.kafka import admin, rdkafka

SCAN_LIMIT = 100_000  # records read per partition in one scan; the next scan goes on from there


@dataclasses.dataclass(frozen=True)
class WindowScan:
    counts: dict[int, int]  # window start (epoch ms) -> records newly seen in it
    positions: dict[str, int]  # "topic/partition" -> the next offset to scan


def scan_windows(engine: Engine, topics: list[str], positions: dict[str, int], window_ms: int,
                 limit: int = SCAN_LIMIT) -> WindowScan:
    """Count the records after `positions` (a partition not in it: from the log's beginning) per
    window; topics that do not exist are skipped."""
    begins, ends = admin.log_ranges(engine.bootstrap, topics, settings=engine.settings)
    counts: dict[int, int] = {}
    scanned = dict(positions)
    for tp, end in ends.items():
        name = f"{tp.topic}/{tp.partition}"
        start = max(scanned.get(name, 0), begins[tp])
        stop = min(end, start + limit)
        for chunk in rdkafka.read_range(engine.client_config, tp.topic, tp.partition, start, stop):
            for message in chunk:
                ts = message.timestamp()[1]
                counts[ts - ts % window_ms] = counts.get(ts - ts % window_ms, 0) + 1
        scanned[name] = max(stop, start)
    return WindowScan(counts, scanned)
