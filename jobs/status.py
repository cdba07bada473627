"""The `query_status` sensor: live state and consumer lag of every query, refreshed every
`status_interval_s` seconds (on by default; it launches nothing).

Each tick observes the source topics (data version = the sum of their end offsets, so new input
marks the readers unsynced on the graph) and works out each query's state (`assets.state`). A
query whose state, lag or latest materialization changed since the last tick gets an observation
(state, reason, consumer_lag: the asset's plots chart the lag) and a `live_status` check
evaluation, which the asset graph shows on the node (passed: running or caught up; warning:
queued, stopping, stopped, lagging, never run, needs reset; failed: failing, broken, data loss,
Kafka unreachable). A broken file shows its positioned error there. Ticks read run storage and
Kafka metadata only (and, as the restart sensor does, mark a run whose worker process died as
failed, so it shows as failing; and wipe the assets of deleted query files, `jobs/orphans.py`);
the tick log has one line per query.
"""

import dataclasses
import json
import time

import dagster as dg
# Not exported by dagster: which materialization an evaluation judges. Without it the UI matches
# a sensor's evaluation to a materialization by time, at the run storage's one-second resolution.
from dagster._core.definitions.asset_checks.asset_check_evaluation import (
    AssetCheckEvaluationTargetMaterializationData as Target)

from assets.checks import LIVE
from assets.factory import QueryAssets
from assets.keys import dead_letter_table_key, dead_letter_topic_key, query_key, topic_key
from assets.overview import Figures, Sample, overview_observation, run_figures, sample
from assets.preview import dead_letter_rows, metadata_or_note, table_tail
from assets.state import QueryState, Status, broken_state, query_state
from jobs.orphans import wipe_orphans
from jobs.sensors import restart_plan
from resources import EngineResource
from resources.platform import PlatformConfig
from streamjoin.app import topics
from streamjoin.app.project import Query, SqlProject

DATA_VERSION_TAG = "dagster/data_version"


def _check(key: dg.AssetKey, state: QueryState, latest) -> dg.AssetCheckEvaluation:
    target = Target(storage_id=latest.storage_id, run_id=latest.run_id,
                    timestamp=latest.timestamp) if latest else None
    return dg.AssetCheckEvaluation(asset_key=key, check_name=LIVE, passed=state.passed,
                                   severity=state.severity, description=state.line,
                                   metadata=state.metadata(), target_materialization_data=target)


def _latest(instance: dg.DagsterInstance, query):
    records = instance.fetch_materializations(query_key(query), limit=1).records
    return records[0] if records else None


def _storage_id(record) -> int | None:
    return record.storage_id if record else None


def _source_events(engine: EngineResource, topics: tuple[str, ...], seen: dict) -> list:
    events = []
    for topic, described in engine.describe_topics(list(topics)).items():  # the existing ones
        total = sum(described["end_offsets"].values())
        if seen.get(topic) != total:
            events.append(dg.AssetObservation(
                asset_key=topic_key(topic), tags={DATA_VERSION_TAG: str(total)},
                metadata={"end_offsets_total": dg.MetadataValue.int(total)}))
        seen[topic] = total
    return events


def _state(context, client, query, config) -> QueryState:
    plan = restart_plan(context.instance, query, config)
    note = plan.note or ("restart requested" if plan.request else "")
    try:
        return query_state(context.instance, client, query, config, restart_note=note)
    except Exception as error:  # noqa: BLE001 - one query's trouble must not hide the rest
        return QueryState(Status.UNKNOWN, f"{type(error).__name__}: {error}".splitlines()[0])


def _figures(context, engine: EngineResource, query: Query, state: QueryState,
             samples: dict) -> Figures:
    previous = Sample(**samples[query.name]) if query.name in samples else None
    try:
        figures = engine.figures(query)
    except Exception:  # noqa: BLE001 - Kafka or the checkpoint unreadable: the state says why
        return Figures(query.name, state, None, None, previous, run_figures(context.instance, query))
    now = sample(figures, time.time())
    samples[query.name] = dataclasses.asdict(now)
    return Figures(query.name, state, figures, now, previous, run_figures(context.instance, query))


def _dead_letter_events(engine: EngineResource, query: Query, figures: Figures) -> list:
    """The dead letters as they are now, while the query runs too (new ones since the last tick)."""
    before = figures.previous.dead if figures.previous else 0
    if figures.now is None or figures.now.dead == before:
        return []
    count = {"dead_letters_total": dg.MetadataValue.int(figures.now.dead)}
    path = engine.delta_path(query) + "-dead-letters"
    return [dg.AssetObservation(asset_key=dead_letter_topic_key(query), metadata=count | {
                "latest_rows": metadata_or_note(lambda: engine.latest_dead_letters(query))}),
            dg.AssetObservation(asset_key=dead_letter_table_key(query), metadata=count | {
                "latest_rows": metadata_or_note(lambda: dead_letter_rows(
                    table_tail(path, "timestamp"), topics.topic_formats(query)))})]


def _window_requests(engine: EngineResource, query: Query, config: PlatformConfig,
                     scans: dict) -> list[dg.AddDynamicPartitionsRequest]:
    """Scan the query's source topics for new records and add the windows they fall in to its
    backfill partitions; `scans` ({query: {"positions", "windows": {key: records}}}) goes on
    from the previous tick."""
    known = scans.setdefault(query.name, {"positions": {}, "windows": {}})
    scan = engine.scan_windows(list(query.source_topics), known["positions"], config.window_ms)
    known["positions"] = scan.positions
    new = []
    for start_ms, count in sorted(scan.counts.items()):
        key = config.window_key(start_ms)
        if not config.offered(start_ms):
            continue
        if key not in known["windows"]:
            new.append(key)
        known["windows"][key] = known["windows"].get(key, 0) + count
    name = config.backfill_partitions(query.name).name
    return [dg.AddDynamicPartitionsRequest(name, new)] if new else []


def _windows(context, engine: EngineResource, query: Query, config: PlatformConfig,
             scans: dict) -> list[dg.AddDynamicPartitionsRequest]:
    try:
        return _window_requests(engine, query, config, scans)
    except Exception as error:  # noqa: BLE001 - the windows wait for the next tick
        context.log.warning(f"{query.name}: data windows not scanned: {error}".splitlines()[0])
        return []


def build_status_sensor(project: SqlProject, assets: QueryAssets,
                        config: PlatformConfig) -> dg.SensorDefinition:
    defined = {key for asset in assets.all()  # observable source assets have one `key`
               for key in getattr(asset, "keys", None) or [asset.key]}

    @dg.sensor(name="query_status", minimum_interval_seconds=config.status_interval_s,
               default_status=dg.DefaultSensorStatus.RUNNING,
               description="Live state, lag, rates and figures of every query (the overview), "
                           "dead letters, and the source topics' end offsets, every few seconds "
                           "(launches nothing).")
    def status(context: dg.SensorEvaluationContext, engine: EngineResource):
        client = engine.get_engine()  # Kafka metadata only; never Spark
        cursor = json.loads(context.cursor) if context.cursor else {}
        seen, reported = cursor.get("topics", {}), cursor.get("queries", {})
        samples, scans, partitions = cursor.get("samples", {}), cursor.get("windows", {}), []
        try:
            events = _source_events(engine, assets.source_topics, seen)
        except ConnectionError as error:  # the queries' states say it once each, below
            events = []
            context.log.warning(f"source topics not observed: {error}")
        rows, changed = [], False
        for query in project.queries:
            latest = _latest(context.instance, query)
            partitions += _windows(context, engine, query, config, scans)
            figures = dataclasses.replace(
                _figures(context, engine, query, _state(context, client, query, config), samples),
                windows=scans.get(query.name, {}).get("windows", {}))
            rows.append(figures)
            events += _dead_letter_events(engine, query, figures)
            changed |= _report(context, query, latest, figures, reported, events)
        for broken in project.broken:
            figures = Figures(broken.name, broken_state(broken.error), None, None, None, {})
            rows.append(figures)
            changed |= _report(context, broken, None, figures, reported, events)
        for line in wipe_orphans(context.instance, defined, {b.name for b in project.broken}):
            context.log.info(line)
        if changed or "overview" not in cursor:
            events.append(overview_observation(rows))
        return dg.SensorResult(asset_events=events, dynamic_partitions_requests=partitions,
                               cursor=json.dumps({"topics": seen, "queries": reported, "samples": samples,
                                                  "windows": scans, "overview": True}))

    return status


def _report(context, query, latest, figures: Figures, reported: dict, events: list) -> bool:
    """Log the query's line; record its observation and live_status evaluation when something
    changed since the last report. Whether it did."""
    state = figures.state
    log = context.log.warning if state.state == Status.FAILING else context.log.info
    log(f"{query.name}: {state.line}")
    signature = json.loads(json.dumps([*figures.signature(), latest.storage_id if latest else None],
                                      default=str))
    if reported.get(query.name) == signature:
        return False
    if _storage_id(_latest(context.instance, query)) != _storage_id(latest):
        return False  # materialized during the tick: the state is stale, the next tick reports
    events += [dg.AssetObservation(asset_key=query_key(query), metadata=figures.metadata()),
               _check(query_key(query), state, latest)]
    reported[query.name] = signature
    return True
