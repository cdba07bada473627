"""The main job on the embedded default: broker, sample data, every query in `sql/`, and a short
table of each output (read back from its Kafka topic) with where it lives."""

from __future__ import annotations

import json
from pathlib import Path

from streamjoin.broker import ensure_bootstrap
from streamjoin.compile import source_serde
from streamjoin.config import Settings
from streamjoin.kafka import admin
from streamjoin.runner.records import decode_output, place
from streamjoin.sqlproject import compile_file, folder_catalog


def produce_samples(sql_dir: Path, samples_dir: Path, bootstrap: str, settings: Settings) -> dict[str, int]:
    """Produce `samples/<folder>/<source>.jsonl` ({ts, key, value} per line) to each declared
    source's topic, once: a topic that already holds records is left alone."""
    produced = {}
    for sources_file in sorted(sql_dir.rglob("sources.sql")):
        folder = sources_file.parent
        for source in folder_catalog(folder):
            sample = samples_dir / folder.relative_to(sql_dir) / f"{source.name}.jsonl"
            if not sample.exists():
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


def show(path: Path, bootstrap: str, settings: Settings, limit: int = 12) -> str:
    """The output of the query file at `path` as a small text table."""
    query = compile_file(path)[-1]
    records = decode_output(admin.read_all(bootstrap, query.sink.topic, settings=settings), query.sink_serde)
    rows = [{"ts": r.ts, "key": r.key, **(r.value or {"(tombstone)": ""})} for r in records]
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


def prepare(sql_dir: Path, samples_dir: Path):
    """Broker (embedded unless configured), the project, and the sample data on its topics."""
    from streamjoin.project import load_project

    settings = Settings.from_env()
    bootstrap = ensure_bootstrap(settings)
    print(f"Kafka: {bootstrap}   state: {settings.home}")
    project = load_project(sql_dir)
    produced = produce_samples(sql_dir, samples_dir, bootstrap, settings)
    print(f"sample data: {sum(produced.values())} records to {len(produced)} topics" if produced
          else "sample data: already on the broker")
    return settings, bootstrap, project


def print_outputs(project, bootstrap: str, settings: Settings, reports: dict | None = None) -> None:
    for spec in project.queries:
        print(f"\n== {spec.group}/{spec.name} ({spec.dialect}) -> topic {spec.output_topic}, Delta {spec.delta_path}")
        report = (reports or {}).get(spec.name)
        if report is not None:
            print(f"   {report.input_rows} in, {report.output_rows} out, {report.late_records} late, "
                  f"{report.dropped_records} dropped, {report.dead_letters} dead letters")
        print(show(spec.path, bootstrap, settings))
    if not settings.kafka_bootstrap:
        print(f"\nThe embedded broker keeps running at {bootstrap} (`streamjoin broker stop` stops it); "
              f"run the demo again to process only what is new.")


def run_demo(sql_dir: Path, samples_dir: Path) -> int:
    """The main job without an orchestrator: every query run in file order."""
    from streamjoin.project import run_query

    settings, bootstrap, project = prepare(sql_dir, samples_dir)
    print_outputs(project, bootstrap, settings, {spec.name: run_query(spec) for spec in project.queries})
    return 0
