"""The figures an operator reads at a glance, recorded by the `query_status` sensor on its tick:

- on each query asset, an observation with its state, lag (total, and per partition as a table),
  read / arrival / output rates (records per second since the previous tick, floats: one
  observation per tick where something changed, a series on the asset's Events tab), the last committed batch and when, the watermark as a time,
  late and dropped records of its latest run report, the dead letters its topic holds, the size
  of its state, and the backfill windows its input data is in (`data_windows`);
- on `streamjoin_overview` (group `overview`), one table with a row per query: the whole project
  in one place.

Figures come from `EngineResource.figures` (`streamjoin.app.status`: checkpoint and Kafka
metadata, never Spark) and from the latest run report recorded in the instance.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timezone

import dagster as dg

from assets.keys import query_key
from assets.preview import table_metadata
from assets.state import QueryState

OVERVIEW_KEY = dg.AssetKey(["streamjoin_overview"])
RUN_FIGURES = ("watermark_ms", "late_records", "dropped_records", "rows_per_second")


def overview_spec() -> dg.AssetSpec:
    return dg.AssetSpec(OVERVIEW_KEY, group_name="overview", kinds={"kafka", "spark"},
                        description="Every query at a glance: state, lag, rates, last batch, "
                                    "watermark, late/dropped records, dead letters and state size "
                                    "(`queries` table, refreshed by the `query_status` sensor).")


@dataclasses.dataclass(frozen=True)
class Sample:
    """What a tick saw of a query's counters (kept in the sensor's cursor for the next rates)."""

    at: float  # epoch seconds
    read: int  # sum of the next offsets of its input partitions
    arrived: int  # sum of its input partitions' log ends
    output: int  # records in its output topic
    dead: int  # records in its dead-letter topic

    def rate(self, previous: "Sample | None", field: str) -> float:
        if previous is None or self.at <= previous.at:
            return 0.0
        return round(max(getattr(self, field) - getattr(previous, field), 0) / (self.at - previous.at), 3)


def sample(figures, at: float) -> Sample:
    return Sample(at, figures.read, sum(p.end for p in figures.partitions), figures.output_records,
                  figures.dead_letters)


def run_figures(instance: dg.DagsterInstance, query) -> dict:
    """The figures of the query's latest run report (its materialization, or a progress
    observation of a continuous run, whichever is newer): watermark, late, dropped, batch rate."""
    key = query_key(query)
    found = []
    materialized = instance.fetch_materializations(key, limit=1).records
    found += [(r.storage_id, r.asset_materialization.metadata) for r in materialized]
    for record in instance.fetch_observations(key, limit=25).records:
        if "batches" in record.asset_observation.metadata:  # a run's progress, not a status tick
            found.append((record.storage_id, record.asset_observation.metadata))
            break
    if not found:
        return {}
    metadata = max(found, key=lambda pair: pair[0])[1]
    return {name: metadata[name].value for name in RUN_FIGURES if name in metadata}


def _time(ms: int | float | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclasses.dataclass(frozen=True)
class Figures:
    """One query's figures of one tick; `figures` None when Kafka or the checkpoint could not
    be read (the state says why)."""

    name: str
    state: QueryState
    figures: object | None
    now: Sample | None
    previous: Sample | None
    run: dict
    windows: dict = dataclasses.field(default_factory=dict)  # backfill window key -> records seen

    def rates(self) -> dict[str, float]:
        if self.now is None:
            return {}
        return {"read_per_second": self.now.rate(self.previous, "read"),
                "arrived_per_second": self.now.rate(self.previous, "arrived"),
                "output_per_second": self.now.rate(self.previous, "output")}

    def metadata(self) -> dict:
        """The query asset's observation: its state and every figure."""
        entries = self.state.metadata() | {k: dg.MetadataValue.float(v) for k, v in self.rates().items()}
        if self.figures is not None:
            f = self.figures
            entries["lag_by_partition"] = table_metadata(
                [{"topic": p.topic, "partition": p.partition, "next_offset": p.position,
                  "log_end": p.end, "lag": p.lag} for p in f.partitions])
            entries["dead_letters_total"] = dg.MetadataValue.int(f.dead_letters)
            entries["output_records_total"] = dg.MetadataValue.int(f.output_records)
            entries["state_size_bytes"] = dg.MetadataValue.int(f.state_bytes)
            if f.last_batch is not None:
                entries["last_batch"] = dg.MetadataValue.int(f.last_batch)
                entries["last_batch_at"] = dg.MetadataValue.timestamp(f.last_batch_ms / 1000)
        if self.windows:  # the windows a backfill can recompute: where the input data is
            entries["data_windows"] = table_metadata(
                [{"window": key, "input_records": n} for key, n in sorted(self.windows.items())])
        if self.run.get("watermark_ms") is not None:
            entries["watermark"] = dg.MetadataValue.timestamp(self.run["watermark_ms"] / 1000)
        for name in ("late_records", "dropped_records"):
            if name in self.run:
                entries[name] = dg.MetadataValue.int(int(self.run[name]))
        return entries

    def row(self) -> dict:
        """The query's row in the overview table."""
        f, rates = self.figures, self.rates()
        lags = ", ".join(f"{p.topic}/{p.partition}: {p.lag}" for p in f.partitions) if f else ""
        return {"query": self.name, "state": self.state.state.value,
                "lag": self.state.consumer_lag if self.state.consumer_lag is not None else "",
                "lag per partition": lags,
                "read/s": rates.get("read_per_second", ""), "in/s": rates.get("arrived_per_second", ""),
                "out/s": rates.get("output_per_second", ""),
                "last batch": "" if f is None or f.last_batch is None else f.last_batch,
                "last batch at": _time(f.last_batch_ms) if f else "",
                "watermark": _time(self.run.get("watermark_ms")),
                "late": self.run.get("late_records", ""), "dropped": self.run.get("dropped_records", ""),
                "dead letters": f.dead_letters if f else "", "state bytes": f.state_bytes if f else ""}

    def signature(self) -> list:
        """What makes a new observation worth recording."""
        return [self.state.state, self.state.reason, self.state.consumer_lag, sorted(self.rates().items()),
                None if self.figures is None else [self.figures.last_batch, self.figures.dead_letters,
                                                   self.figures.state_bytes], sorted(self.run.items()),
                sorted(self.windows.items())]


def overview_observation(rows: list[Figures]) -> dg.AssetObservation:
    counts = {}
    for figures in rows:
        counts[figures.state.state.value] = counts.get(figures.state.state.value, 0) + 1
    return dg.AssetObservation(asset_key=OVERVIEW_KEY, metadata={
        "queries": table_metadata([figures.row() for figures in rows]),
        "summary": dg.MetadataValue.text(", ".join(f"{n} {state}" for state, n in sorted(counts.items()))),
        "total_lag": dg.MetadataValue.int(sum(f.state.consumer_lag or 0 for f in rows)),
        "dead_letters_total": dg.MetadataValue.int(sum(f.figures.dead_letters for f in rows if f.figures)),
    })
