"""The main job on the embedded default: broker, sample data, every query in `sql/`, and a short
table of each output (read back from its Kafka topic) with where it lives."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Mapping

from streamjoin.app.engine import Engine
from streamjoin.app.project import Query, SqlProject, folder_catalog, load_project
from streamjoin.kafka import admin
from streamjoin.kafka.records import dedupe_replayed, place
from streamjoin.runtime.compiler import source_serde
from streamjoin.serde.formats import decode
from streamjoin.settings import Settings


def produce_samples(sql_dir: Path, samples_dir: Path, bootstrap: str, settings: Settings) -> dict[str, int]:
    """Produce `samples/<folder>/<source>.jsonl` ({ts, key, value} per line) to each declared
    source's topic, once: a topic that already holds records is left alone. The file is found by
    the source's name ignoring case (ksqlDB folds an unquoted `pageviews` to PAGEVIEWS)."""
    produced = {}
    for sources_file in sorted(sql_dir.rglob("sources.sql")):
        folder = sources_file.parent
        samples = {path.stem.lower(): path for path in (samples_dir / folder.relative_to(sql_dir)).glob("*.jsonl")}
        for source in folder_catalog(folder):
            sample = samples.get(source.name.lower())
            if sample is None:
                continue
            partitions = source.partitions or 1
            admin.create_topics(bootstrap, {source.topic: partitions}, settings=settings)
            if any(admin.end_offsets(bootstrap, source.topic, settings=settings).values()):
                continue
            serde = source_serde(source)
            rows = [json.loads(line) for line in sample.read_text().splitlines() if line.strip()]
            placed = [place(source.topic, partitions, serde, r["key"], r["value"], r["ts"], i) for i, r in enumerate(rows)]
            produced[source.topic] = admin.produce(bootstrap, source.topic, [p.record for p in placed], settings=settings)
    return produced


def show(query: Query, engine: Engine, limit: int = 12) -> str:
    """The output topic of `query` as a small text table (replayed copies dropped)."""
    serde = query.compiled[-1].sink_serde
    consumed = sorted(admin.read_all(engine.bootstrap, query.output_topic, settings=engine.settings),
                      key=lambda r: (r.partition, r.offset))
    rows = []
    for record in dedupe_replayed(consumed):
        decoded = decode(serde, record.key, record.value, record.timestamp_ms)
        key = None if decoded.key is None else (decoded.key[0] if len(decoded.key) == 1 else decoded.key)
        rows.append({"ts": record.timestamp_ms, "key": key, **(decoded.value or {"(tombstone)": ""})})
    if not rows:
        return "  (no rows)"
    columns = list(dict.fromkeys(c for row in rows for c in row))
    table = [[str(row.get(c, "")) for c in columns] for row in rows[:limit]]
    widths = [max(len(c), *(len(r[i]) for r in table)) for i, c in enumerate(columns)]
    lines = ["  " + "  ".join(c.ljust(w) for c, w in zip(columns, widths))]
    lines += ["  " + "  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in table]
    if len(rows) > limit:
        lines.append(f"  … {len(rows) - limit} more")
    return "\n".join(lines)


def prepare(sql_dir: Path, samples_dir: Path, engine: Engine) -> SqlProject:
    """Broker (embedded unless configured), the project, and the sample data on its topics."""
    print(f"Kafka: {engine.bootstrap}   state: {engine.settings.home}")
    project = load_project(sql_dir)
    produced = produce_samples(sql_dir, samples_dir, engine.bootstrap, engine.settings)
    print(f"sample data: {sum(produced.values())} records to {len(produced)} topics" if produced
          else "sample data: already on the broker")
    return project


def print_outputs(project: SqlProject, engine: Engine, reports: dict | None = None) -> None:
    for query in project.queries:
        print(f"\n== {query.group}/{query.name} ({query.dialect}) -> topic {query.output_topic}, "
              f"Delta {engine.delta_path(query)}")
        report = (reports or {}).get(query.name)
        if report is not None:
            print(f"   {report.input_rows} in, {report.output_rows} out, {report.late_records} late, "
                  f"{report.dropped_records} dropped, {report.dead_letters} dead letters")
        print(show(query, engine))
    if not engine.settings.kafka_bootstrap:
        print(f"\nThe embedded broker keeps running at {engine.bootstrap} "
              f"(`STREAMJOIN_HOME={engine.settings.home} streamjoin broker stop` stops it); "
              f"run the demo again to process only what is new.")


DEMO_HOME = "demo"  # under the default home


def demo_settings(env: Mapping[str, str] | None = None) -> Settings:
    """The demo's settings: its own home `<default home>/demo` (checkpoints, Delta tables,
    embedded broker) unless STREAMJOIN_HOME names one. Sharing `make ui`'s home, the checkpoints
    the demo advanced made the UI's first run read nothing while its topics looked empty."""
    env = os.environ if env is None else env
    settings = Settings.from_env(env)
    return settings if env.get("STREAMJOIN_HOME") else \
        dataclasses.replace(settings, home=settings.home / DEMO_HOME)


def run_demo(sql_dir: Path, samples_dir: Path) -> int:
    """The main job without an orchestrator: every query run in file order."""
    engine = Engine(demo_settings())
    project = prepare(sql_dir, samples_dir, engine)
    print_outputs(project, engine, {query.name: engine.run(query) for query in project.queries})
    return 0
