"""Asset keys and the run metadata shared by assets, checks and sensors."""

import dagster as dg

from streamjoin.app.project import Query
from streamjoin.runtime.report import RunReport

FINGERPRINT = "state_fingerprint"  # metadata entry recorded with each materialization / reset


def query_key(query: Query) -> dg.AssetKey:
    return dg.AssetKey([query.name])


def topic_key(topic: str) -> dg.AssetKey:
    return dg.AssetKey(["kafka", topic])


def delta_key(query: Query) -> dg.AssetKey:
    return dg.AssetKey(["delta", query.name])


def report_metadata(report: RunReport) -> dict:
    """Numeric entries (plotted by the UI across materializations) and where the output went.
    Optional figures are left out rather than recorded as fake zeros."""
    numbers = {
        "input_rows": dg.MetadataValue.int(report.input_rows),
        "output_rows": dg.MetadataValue.int(report.output_rows),
        "rows_per_second": dg.MetadataValue.float(float(report.rows_per_second)),
        "batch_duration_ms": dg.MetadataValue.int(report.batch_duration_ms),
        "batches": dg.MetadataValue.int(report.batches),
        "late_records": dg.MetadataValue.int(report.late_records),
        "dropped_records": dg.MetadataValue.int(report.dropped_records),
        "dead_letters": dg.MetadataValue.int(report.dead_letters),
        "consumer_lag": dg.MetadataValue.int(report.consumer_lag),
    }
    if report.watermark_ms is not None:
        numbers["watermark_ms"] = dg.MetadataValue.int(report.watermark_ms)
    if report.delta_version is not None:
        numbers["delta_version"] = dg.MetadataValue.int(report.delta_version)
    where = {"output_topic": dg.MetadataValue.text(report.output_topic),
             "delta_path": dg.MetadataValue.path(report.delta_path)}
    extra = {f"extra/{k}": v for k, v in report.extra.items()
             if isinstance(v, (int, float, str, bool))}
    return numbers | where | extra


def latest_metadata(instance: dg.DagsterInstance, key: dg.AssetKey) -> dict | None:
    """Metadata values (plain Python) of the asset's latest materialization, or None."""
    event = instance.get_latest_materialization_event(key)
    if event is None or event.asset_materialization is None:
        return None
    return {name: entry.value for name, entry in event.asset_materialization.metadata.items()}


def recorded_fingerprint(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """The state fingerprint of the latest materialization or reset observation of the asset,
    whichever is newer (None when the query never ran)."""
    events = [result.records[0].event_log_entry
              for result in (instance.fetch_materializations(key, limit=1),
                             instance.fetch_observations(key, limit=1))
              if result.records]
    for entry in sorted(events, key=lambda e: e.timestamp, reverse=True):
        event = entry.asset_materialization or entry.asset_observation
        if FINGERPRINT in event.metadata:
            return event.metadata[FINGERPRINT].value
    return None
