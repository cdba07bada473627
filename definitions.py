"""The one Definitions(...) wiring point: assets, checks, jobs, sensors, schedules and resources
built from the query files under sql/ (STREAMJOIN_SQL_DIR overrides the folder).

Loading is lazy (`@dg.definitions`): importing this module does not parse sql/; loading the
definitions does — every query is compiled once, there, and runs, backfills, checks and sensor
ticks use that `Query` (an edited .sql file takes effect when the code location reloads; its
asset's code version changes with it). A file that does not compile does not take the others
down: it becomes a failing asset whose first line is its positioned error."""

import warnings

import dagster as dg

from assets import build_assets, build_checks
from assets.overview import overview_spec
from jobs import SQL_DIR
from jobs.backfill import build_backfill_jobs, build_backfill_sensor
from jobs.repartition import build_repartition_jobs
from jobs.samples import build_samples_job
from jobs.sensors import build_launch_sensor, build_restart_sensor
from jobs.status import build_status_sensor
from jobs.streaming import (build_reset_jobs, build_start_jobs, build_stop_jobs,
                            build_stream_jobs)
from resources import default_resources
from resources.platform import PlatformConfig
from streamjoin.app.project import SqlProject, load_project

# Observable source assets are a beta API we use on purpose (and Dagster's sensor decorator warns
# about its own `owners` parameter): keep these notices out of every code-server and run log.
warnings.filterwarnings("ignore", category=dg.BetaWarning)



def build_definitions(project: SqlProject, config: PlatformConfig | None = None,
                      resources: dict | None = None) -> dg.Definitions:
    """`resources`: {"engine": EngineResource, ...}; default: `default_resources()` (the
    environment's settings)."""
    config = config or PlatformConfig.from_env()
    resources = resources or default_resources()
    assets = build_assets(project, resources["engine"])
    stream_jobs, start_jobs = build_stream_jobs(project, assets), build_start_jobs(project, assets)
    backfill_jobs = build_backfill_jobs(project, config)
    repartition_jobs, schedules = build_repartition_jobs(project, assets, config)
    return dg.Definitions(
        assets=[*assets.all(), overview_spec()],
        asset_checks=build_checks(project, config),
        jobs=[*stream_jobs, *start_jobs, *build_stop_jobs(project), *backfill_jobs,
              *repartition_jobs, *build_reset_jobs(project), build_samples_job(project)],
        sensors=[build_status_sensor(project, assets, config),
                 build_launch_sensor(project, stream_jobs),
                 build_restart_sensor(project, [*stream_jobs, *start_jobs], config),
                 build_backfill_sensor(project, backfill_jobs, config)],
        schedules=schedules,
        resources=resources,
        # Every job is one step (a query, a backfill window, a reset): running it inside the run
        # worker saves a process start and keeps one Spark session per run.
        executor=dg.in_process_executor,
    )


@dg.definitions
def defs() -> dg.Definitions:
    return build_definitions(load_project(SQL_DIR, on_error="collect"))
