"""Streaming jobs: one asset job per (non-repartition) query that materialises its multi-asset,
and a reset job per query that deletes its checkpoint after an incompatible SQL change."""

import dagster as dg

from assets.factory import QueryAssets
from assets.keys import FINGERPRINT, query_key
from streamjoin import project as facade
from streamjoin.project import Project, QuerySpec

IN_FLIGHT = (dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED,
             dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED)
FAILED = (dg.DagsterRunStatus.FAILURE,)  # restarted by the restart sensor
CANCELED = (dg.DagsterRunStatus.CANCELED,)  # stopped on purpose: neither launched nor restarted


def stream_job_name(spec: QuerySpec) -> str:
    return f"stream_{spec.name}"


def reset_job_name(spec: QuerySpec) -> str:
    return f"reset_{spec.name}"


def streaming_queries(project: Project) -> list[QuerySpec]:
    """Queries run by the launch/restart sensors (PARTITION BY queries run on a schedule)."""
    return [q for q in project.queries if not q.is_repartition]


def query_job(name: str, spec: QuerySpec, assets: QueryAssets):
    """An asset job materialising the query's multi-asset (its checks are run separately)."""
    selection = dg.AssetSelection.assets(assets.queries[spec.name]).without_checks()
    return dg.define_asset_job(name, selection=selection, tags={"streamjoin/query": spec.name})


def build_stream_jobs(project: Project, assets: QueryAssets) -> list:
    return [query_job(stream_job_name(spec), spec, assets) for spec in streaming_queries(project)]


def build_reset_jobs(project: Project) -> list[dg.JobDefinition]:
    return [_reset_job(spec) for spec in project.queries]


def _reset_job(spec: QuerySpec) -> dg.JobDefinition:
    @dg.op(name=f"reset_{spec.name}_checkpoint")
    def reset_checkpoint(context: dg.OpExecutionContext) -> None:
        """Delete the checkpoint and record the new state fingerprint, which re-enables the
        launch and restart sensors (they refuse to run on an incompatible checkpoint)."""
        facade.reset(spec)
        context.log_event(dg.AssetObservation(
            asset_key=query_key(spec),
            metadata={FINGERPRINT: facade.state_fingerprint(spec), "reset": True}))

    @dg.job(name=reset_job_name(spec), tags={"streamjoin/query": spec.name},
            description=f"Delete the checkpoint of `{spec.name}`; then backfill its history.")
    def reset_job():
        reset_checkpoint()

    return reset_job


def recent_runs(instance: dg.DagsterInstance, job_name: str, limit: int) -> list[dg.DagsterRun]:
    """The job's latest runs, newest first."""
    return list(instance.get_runs(filters=dg.RunsFilter(job_name=job_name), limit=limit))
