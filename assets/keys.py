"""Asset keys, run tags and the run metadata shared by assets, checks and sensors.

The asset graph labels a node with the last part of its key, so that part says what the node is:
`<query>` is the query (the file's name), `kafka/<topic>.topic` a Kafka topic and
`delta/<query>.table` a Delta table (`dead-letters.<query>.topic` / `.table` its dead letters).
"""

import dagster as dg

from streamjoin.app.engine import RunReport

FINGERPRINT = "state_fingerprint"  # metadata entry recorded with each materialization / reset
QUERY_TAG = "streamjoin/query"  # on every run about a query, with ROLE_TAG saying what it does:
ROLE_TAG = "streamjoin/role"  # run (stream, start, repartition, the UI's asset job) | backfill | reset | stop
MODE_TAG = "streamjoin/mode"  # the mode the run runs the query in (set when its step starts)
STOP_TAG = "streamjoin/stop_requested"  # set on a running run by stop_<query>: drain and stop
PID_TAG = "streamjoin/pid"  # the run worker's process, so the restart sensor can spot dead runs
HOST_TAG = "streamjoin/host"
FINGERPRINT_TAG = "streamjoin/state_fingerprint"  # on a reset run: the state it starts from
DEAD_LETTERS = "-dead-letters"  # the engine's suffix: topic and table `<query>-dead-letters`


def query_key(query) -> dg.AssetKey:
    """The query's asset (a `Query` or a broken file: anything with a `name`)."""
    return dg.AssetKey([query.name])


def topic_key(topic: str) -> dg.AssetKey:
    return dg.AssetKey(["kafka", f"{topic}.topic"])


def delta_key(query) -> dg.AssetKey:
    return dg.AssetKey(["delta", f"{query.name}.table"])


# The dead letters' labels start with what they are: the graph shortens a long label in its
# middle, and `<query>-dead-letters.topic` read `pageviews_enrich…-letters.topic`, an output.
def dead_letter_topic_key(query) -> dg.AssetKey:
    return dg.AssetKey(["kafka", f"dead-letters.{query.name}.topic"])


def dead_letter_table_key(query) -> dg.AssetKey:
    return dg.AssetKey(["delta", f"dead-letters.{query.name}.table"])


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
        numbers["watermark_ms"] = dg.MetadataValue.int(report.watermark_ms)  # plotted
        numbers["watermark"] = dg.MetadataValue.timestamp(report.watermark_ms / 1000)  # read as a time
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


def recorded_fingerprint(instance: dg.DagsterInstance, query) -> str | None:
    """The state fingerprint the query's checkpoint holds: that of its latest materialization or
    of its latest successful reset run (tagged FINGERPRINT_TAG), whichever is newer; None when
    the query never ran. (Run tags rather than observations: the status sensor observes the
    query asset every few seconds.)"""
    found = []
    event = instance.get_latest_materialization_event(query_key(query))
    if event is not None and FINGERPRINT in event.asset_materialization.metadata:
        found.append((event.timestamp, event.asset_materialization.metadata[FINGERPRINT].value))
    resets = instance.get_run_records(dg.RunsFilter(
        tags={QUERY_TAG: query.name, ROLE_TAG: "reset"},
        statuses=[dg.DagsterRunStatus.SUCCESS]), limit=1)
    for record in resets:
        found.append((record.end_time or 0.0, record.dagster_run.tags.get(FINGERPRINT_TAG)))
    return max(found, key=lambda pair: pair[0])[1] if found else None


def query_runs(instance: dg.DagsterInstance, name: str, limit: int) -> list[dg.DagsterRun]:
    """The latest runs that ran the query (any job, the UI's asset job included), newest first."""
    return list(instance.get_runs(filters=dg.RunsFilter(tags=role_tags(name, "run")), limit=limit))


def mode_run_config(query, mode: str) -> dict:
    """The run config that runs the query's asset in `mode` (what a start_ job presets)."""
    return {"ops": {query.name: {"config": {"mode": mode}}}}


def run_mode(run: dg.DagsterRun, query) -> str:
    """The mode `run` runs the query in. Its step tags it when it starts; until then (a run
    the status sensor sees between STARTED and its step) the run config it was launched with
    says it (`mode_run_config`), else the query's own mode."""
    launched = run.run_config.get("ops", {}).get(query.name, {}).get("config", {}).get("mode")
    return run.tags.get(MODE_TAG) or launched or query.mode


def role_tags(name: str, role: str) -> dict[str, str]:
    return {QUERY_TAG: name, ROLE_TAG: role}
