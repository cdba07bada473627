"""The main job (`make demo`) through Dagster: start the embedded broker, produce the sample
data, materialize every query asset of `sql/` (dependencies first: a repartition job before the
joins that read its topic) and print a short table per output."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg

from assets import build_assets
from resources import default_resources
from streamjoin.broker import ensure_bootstrap
from streamjoin.config import Settings
from streamjoin.demo import produce_samples, show
from streamjoin.project import load_project

ROOT = Path(__file__).resolve().parents[1]


def main(sql_dir: Path = ROOT / "sql", samples_dir: Path = ROOT / "samples") -> int:
    settings = Settings.from_env()
    bootstrap = ensure_bootstrap(settings)
    print(f"Kafka: {bootstrap}   state: {settings.home}")
    project = load_project(sql_dir)
    produced = produce_samples(sql_dir, samples_dir, bootstrap, settings)
    print(f"sample data: {sum(produced.values())} records to {len(produced)} topics" if produced
          else "sample data: already on the broker")
    assets = build_assets(project)
    with dg.instance_for_test() as instance:  # a throw-away Dagster instance for this one run
        result = dg.materialize(assets.all(), instance=instance, resources=default_resources(),
                                selection=[*(key for a in assets.queries.values() for key in a.keys)],
                                raise_on_error=False)
    for spec in project.queries:
        print(f"\n== {spec.group}/{spec.name} ({spec.dialect}) -> topic {spec.output_topic}, Delta {spec.delta_path}")
        print(show(spec.path, bootstrap, settings))
    print(f"\nDagster: {'materialized every query' if result.success else 'a materialization FAILED'} "
          f"({len(project.queries)} queries); the embedded broker keeps running at {bootstrap} "
          f"(`.venv/bin/streamjoin broker stop`).")
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
