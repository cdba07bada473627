"""Sample data for a first look: `samples/<folder>/<source>.jsonl` produced to each declared
source topic that is still empty (a topic holding records is left alone). `make ui` runs this
module before starting Dagster; in the UI the `load_samples` job does the same."""

import sys
import warnings
from pathlib import Path

import dagster as dg

from jobs import SQL_DIR
from resources import EngineResource, default_resources
from streamjoin.app.engine import Engine
from streamjoin.app.project import SqlProject
from streamjoin.app.samples import produce_samples

ROOT = Path(__file__).resolve().parents[1]
SAMPLES_DIR = ROOT / "samples"


def seed(engine: Engine, sql_dir: Path, samples_dir: Path = SAMPLES_DIR) -> str:
    """Produce the samples; one line saying what happened."""
    produced = produce_samples(sql_dir, samples_dir, engine.bootstrap, engine.settings)
    if not produced:
        return f"sample data: already on the broker at {engine.bootstrap}"
    return (f"sample data: {sum(produced.values())} records to {len(produced)} topics at "
            f"{engine.bootstrap}")


def build_samples_job(project: SqlProject) -> dg.JobDefinition:
    @dg.op(name="produce_samples")
    def produce(context: dg.OpExecutionContext, engine: EngineResource) -> None:
        context.log.info(seed(engine.get_engine(), project.root))

    @dg.job(name="load_samples", description="Produce the sample data of `samples/` to the "
                                             "source topics that are still empty.")
    def load_samples():
        produce()

    return load_samples


def main() -> int:
    warnings.filterwarnings("ignore", category=dg.BetaWarning)
    print(seed(default_resources()["engine"].get_engine(), SQL_DIR))
    return 0


if __name__ == "__main__":
    sys.exit(main())
