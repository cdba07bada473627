"""A query's live state — what an operator asks first: is it running, stopped (and why), failing,
lagging? Worked out from run storage (the query's latest run, found by its tags), the consumer lag
(`Engine.consumer_lag`) and the state fingerprint. The `query_status` sensor reports it every few
seconds as the `live_status` check and an observation of the query asset; a check run after a
materialization reports it too.
"""

import dataclasses
import enum
from datetime import datetime, timezone

import dagster as dg

from assets.keys import STOP_TAG, query_key, query_runs, recorded_fingerprint, run_mode
from resources.platform import PlatformConfig
from streamjoin.app.engine import DataLossError, Engine
from streamjoin.app.project import Query



class Status(enum.StrEnum):
    """A query's live state, as the UI prints it."""

    RUNNING = "running"
    QUEUED = "queued"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILING = "failing"
    LAGGING = "lagging"
    UP_TO_DATE = "up to date"
    NEVER_RUN = "never run"
    BROKEN = "broken"
    NEEDS_RESET = "needs reset"
    DATA_LOSS = "data loss"
    NO_KAFKA = "kafka unreachable"
    UNKNOWN = "unknown"  # the state could not be worked out (the reason says why)


HEALTHY = (Status.RUNNING, Status.UP_TO_DATE)
ERRORS = (Status.FAILING, Status.BROKEN, Status.DATA_LOSS, Status.NO_KAFKA)  # everything else is a warning

WAITING = (dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED,  # not started yet
           dg.DagsterRunStatus.STARTING)
IN_FLIGHT = (*WAITING, dg.DagsterRunStatus.STARTED)
ENDED_AS = {dg.DagsterRunStatus.FAILURE: Status.FAILING, dg.DagsterRunStatus.CANCELED: Status.STOPPED}


@dataclasses.dataclass(frozen=True)
class QueryState:
    state: Status
    reason: str
    consumer_lag: int | None = None
    mode: str = ""  # the mode of the run in flight (available_now | continuous); "" when none

    @property
    def passed(self) -> bool:
        return self.state in HEALTHY

    @property
    def severity(self) -> dg.AssetCheckSeverity:
        return dg.AssetCheckSeverity.ERROR if self.state in ERRORS else dg.AssetCheckSeverity.WARN

    @property
    def line(self) -> str:
        lag = "" if self.consumer_lag is None else f", lag {self.consumer_lag}"
        return f"{self.state}{lag}: {self.reason}"

    def metadata(self) -> dict:
        entries = {"state": dg.MetadataValue.text(self.state.value),
                   "reason": dg.MetadataValue.text(self.reason)}
        if self.consumer_lag is not None:
            entries["consumer_lag"] = dg.MetadataValue.int(self.consumer_lag)
        if self.mode:
            entries["running_mode"] = dg.MetadataValue.text(self.mode)
        return entries


def incompatible_change(instance: dg.DagsterInstance, query: Query) -> str | None:
    """Why the query must not run from its checkpoint, or None."""
    recorded = recorded_fingerprint(instance, query)
    current = query.state_fingerprint
    if recorded is None or recorded == current:
        return None
    return (f"incompatible SQL change or engine upgrade (state fingerprint {recorded} -> {current}); "
            f"run reset_{query.name} and backfill instead of restarting")


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return ""
    return " at " + datetime.fromtimestamp(timestamp, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def failure_message(instance: dg.DagsterInstance, run_id: str) -> str:
    """The first line of the error that failed the run (its step's, else the run's)."""
    for kind in (dg.DagsterEventType.STEP_FAILURE, dg.DagsterEventType.RUN_FAILURE):
        for entry in instance.all_logs(run_id, of_type=kind):
            event = entry.dagster_event
            data = event.event_specific_data if event else None
            error = getattr(data, "error", None)
            text = error.message if error else (event.message if event else entry.message)
            if text:
                return text.strip().splitlines()[0]
    return "the run failed"


def _lag(engine: Engine, query: Query) -> tuple[int | None, QueryState | None]:
    try:
        return engine.consumer_lag(query), None
    except DataLossError as error:
        return None, QueryState(Status.DATA_LOSS, str(error).splitlines()[0])
    except ConnectionError as error:  # KafkaUnreachable: one line naming the servers
        return None, QueryState(Status.NO_KAFKA, str(error).splitlines()[0])


def query_state(instance: dg.DagsterInstance, engine: Engine, query: Query,
                config: PlatformConfig, this_run: dg.DagsterRun | None = None,
                restart_note: str = "") -> QueryState:
    """`this_run`: the run a check evaluates in when that run ran the query (its step has
    finished: it counts as the latest run, succeeded). `restart_note`: what the restart sensor
    plans for a failing query."""
    flagged = incompatible_change(instance, query)
    if flagged:
        return QueryState(Status.NEEDS_RESET, flagged)
    lag, problem = _lag(engine, query)
    if problem:
        return problem
    if this_run is not None:
        last, ended = this_run.with_status(dg.DagsterRunStatus.SUCCESS), None
    else:
        runs = query_runs(instance, query.name, limit=1)
        last = runs[0] if runs else None
        record = instance.get_run_record_by_id(last.run_id) if last else None
        ended = record.end_time if record else None
    if last is None:
        how = f"repartition_{query.name} runs on its schedule" if query.is_repartition else \
            f"start_{query.name} runs it continuously"
        return QueryState(Status.NEVER_RUN, f"never run: materialize it, or {how}", lag)
    mode = run_mode(last, query)
    stop = last.tags.get(STOP_TAG)
    if last.status in WAITING:
        return QueryState(Status.QUEUED, f"run {last.run_id[:8]} waits for a free run slot", lag)
    if last.status == dg.DagsterRunStatus.CANCELING or (stop and last.status in IN_FLIGHT):
        return QueryState(Status.STOPPING, f"run {last.run_id[:8]} drains its batch and stops", lag, mode)
    if last.status == dg.DagsterRunStatus.STARTED:
        if lag > config.max_consumer_lag:
            return QueryState(Status.LAGGING, f"run {last.run_id[:8]} ({mode}) is {lag} records behind "
                                       f"(limit {config.max_consumer_lag})", lag, mode)
        return QueryState(Status.RUNNING, f"run {last.run_id[:8]} ({mode})", lag, mode)
    if last.status in ENDED_AS:
        state = ENDED_AS[last.status]
        why = failure_message(instance, last.run_id) if state == Status.FAILING else \
            "its run was canceled from the UI"
        return QueryState(state, f"{why} (run {last.run_id[:8]}{_when(ended)})"
                                 f"{'; ' + restart_note if restart_note else ''}", lag)
    if stop:
        return QueryState(Status.STOPPED, f"stopped on request ({stop}){_when(ended)}; start_{query.name} "
                                   "resumes from there", lag)
    if mode == "continuous":
        return QueryState(Status.STOPPED, f"its continuous run {last.run_id[:8]} ended{_when(ended)}; "
                                   f"start_{query.name} starts it again", lag)
    if lag > 0:
        records = "record" if lag == 1 else "records"
        return QueryState(Status.LAGGING, f"{lag} new {records} since run {last.run_id[:8]}", lag)
    return QueryState(Status.UP_TO_DATE, f"caught up by run {last.run_id[:8]}{_when(ended)}", lag)


def broken_state(error: Exception) -> QueryState:
    return QueryState(Status.BROKEN, str(error).splitlines()[0])
