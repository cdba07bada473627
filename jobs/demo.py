"""The main job (`make demo`) through Dagster: start the embedded broker, produce the sample
data, materialize every query asset of `sql/` (dependencies first: a repartition job before the
joins that read its topic) with the default resources on the demo's own home (`demo_settings`:
never the checkpoints `make ui` runs from) and print a short table per output."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import dagster as dg

from assets import build_assets
from resources import default_resources
from streamjoin.app.samples import demo_settings, prepare, print_outputs

ROOT = Path(__file__).resolve().parents[1]
warnings.filterwarnings("ignore", category=dg.BetaWarning)  # observable source assets, on purpose


def main(sql_dir: Path = ROOT / "sql", samples_dir: Path = ROOT / "samples") -> int:
    resources = default_resources(demo_settings())
    engine = resources["engine"].get_engine()  # the same settings the materializations use
    project = prepare(sql_dir, samples_dir, engine)
    assets = build_assets(project, resources["engine"])
    with dg.instance_for_test() as instance:  # a throw-away Dagster instance for this one run
        result = dg.materialize(assets.all(), instance=instance, resources=resources,
                                selection=[key for a in assets.queries.values() for key in a.keys],
                                raise_on_error=False)
    print_outputs(project, engine)
    print(f"\nDagster: {'materialized every query' if result.success else 'a materialization FAILED'} "
          f"({len(project.queries)} queries)")
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
