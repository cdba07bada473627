"""Repartition jobs: each standalone PARTITION BY query is an asset job run on a schedule (its
`-- schedule:` cron, else the configured default); its output topic is an asset of the query."""

import dagster as dg

from assets.factory import QueryAssets
from jobs.streaming import query_job
from resources.platform import PlatformConfig
from streamjoin.project import Project, QuerySpec


def repartition_job_name(spec: QuerySpec) -> str:
    return f"repartition_{spec.name}"


def build_repartition_jobs(project: Project, assets: QueryAssets,
                           config: PlatformConfig) -> tuple[list, list[dg.ScheduleDefinition]]:
    jobs, schedules = [], []
    for spec in project.queries:
        if not spec.is_repartition:
            continue
        job = query_job(repartition_job_name(spec), spec, assets)
        jobs.append(job)
        schedules.append(dg.ScheduleDefinition(
            name=f"{repartition_job_name(spec)}_schedule", job=job,
            cron_schedule=spec.schedule or config.repartition_cron, execution_timezone="UTC"))
    return jobs, schedules
