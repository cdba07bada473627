"""Repartition jobs: each standalone PARTITION BY query is an asset job run on a schedule (its
`-- schedule:` cron, else the configured default); its output topic is an asset of the query."""

import dagster as dg

from assets.factory import QueryAssets
from jobs.streaming import query_job
from resources.platform import PlatformConfig
from streamjoin.app.project import Query, SqlProject


def repartition_job_name(query: Query) -> str:
    return f"repartition_{query.name}"


def build_repartition_jobs(project: SqlProject, assets: QueryAssets,
                           config: PlatformConfig) -> tuple[list, list[dg.ScheduleDefinition]]:
    jobs, schedules = [], []
    for query in project.queries:
        if not query.is_repartition:
            continue
        job = query_job(repartition_job_name(query), query, assets)
        jobs.append(job)
        schedules.append(dg.ScheduleDefinition(
            name=f"{repartition_job_name(query)}_schedule", job=job,
            cron_schedule=query.schedule or config.repartition_cron, execution_timezone="UTC"))
    return jobs, schedules
