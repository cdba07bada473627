"""Streaming jobs: one asset job per (non-repartition) query that materialises its multi-asset,
and a reset job per query that deletes its checkpoint after an incompatible SQL change."""

import dagster as dg

from assets.factory import QueryAssets
from assets.keys import FINGERPRINT, query_key
from resources import EngineResource
from streamjoin.app.project import Query, SqlProject

IN_FLIGHT = (dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED,
             dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED)
FAILED = (dg.DagsterRunStatus.FAILURE,)  # restarted by the restart sensor
CANCELED = (dg.DagsterRunStatus.CANCELED,)  # stopped on purpose: neither launched nor restarted


def stream_job_name(query: Query) -> str:
    return f"stream_{query.name}"


def reset_job_name(query: Query) -> str:
    return f"reset_{query.name}"


def streaming_queries(project: SqlProject) -> list[Query]:
    """Queries run by the launch/restart sensors (PARTITION BY queries run on a schedule)."""
    return [q for q in project.queries if not q.is_repartition]


def query_job(name: str, query: Query, assets: QueryAssets):
    """An asset job materialising the query's multi-asset (its checks are run separately)."""
    selection = dg.AssetSelection.assets(assets.queries[query.name]).without_checks()
    return dg.define_asset_job(name, selection=selection, tags={"streamjoin/query": query.name})


def build_stream_jobs(project: SqlProject, assets: QueryAssets) -> list:
    return [query_job(stream_job_name(q), q, assets) for q in streaming_queries(project)]


def build_reset_jobs(project: SqlProject) -> list[dg.JobDefinition]:
    return [_reset_job(query) for query in project.queries]


def _reset_job(query: Query) -> dg.JobDefinition:
    @dg.op(name=f"reset_{query.name}_checkpoint")
    def reset_checkpoint(context: dg.OpExecutionContext, engine: EngineResource) -> None:
        """Delete the checkpoint and record the new state fingerprint, which re-enables the
        launch and restart sensors (they refuse to run on an incompatible checkpoint)."""
        engine.get_engine().reset(query)
        context.log_event(dg.AssetObservation(
            asset_key=query_key(query),
            metadata={FINGERPRINT: query.state_fingerprint, "reset": True}))

    @dg.job(name=reset_job_name(query), tags={"streamjoin/query": query.name},
            description=f"Delete the checkpoint of `{query.name}`; then backfill its history.")
    def reset_job():
        reset_checkpoint()

    return reset_job


def recent_runs(instance: dg.DagsterInstance, job_name: str, limit: int) -> list[dg.DagsterRun]:
    """The job's latest runs, newest first."""
    return list(instance.get_runs(filters=dg.RunsFilter(job_name=job_name), limit=limit))
