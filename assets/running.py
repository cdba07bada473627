"""Running a query inside a materialization: the engine works in a thread while the step yields
an observation per progress report (events logged from another thread would only show when the
step ends) and watches for a stop request.

Stopping: `stop_<query>` tags the running run with STOP_TAG. The step sees the tag within a
second and drains: it waits until the Spark streaming query's current trigger has finished (the
batch is written and committed), notes the offsets that batch ended at, and stops the query. The
engine's run then returns normally, so the materialization records where the query stopped.
A run worker runs one query in its own Spark session, so every active stream of the session is
this query's.
"""

import dataclasses
import json
import queue
import threading

import dagster as dg

from assets.keys import STOP_TAG, query_key, report_metadata
from streamjoin.app.engine import Engine
from streamjoin.app.project import Query

POLL_S = 1.0  # how often the step looks for a stop request


@dataclasses.dataclass
class Stop:
    """A stop request and what draining found."""

    requested_by: str
    batch_id: int | None = None  # the last committed batch
    offsets: dict = dataclasses.field(default_factory=dict)  # {topic: {partition: next offset}}
    interrupted: bool = False  # a batch was still running at the drain timeout

    def metadata(self) -> dict:
        return {"stopped": dg.MetadataValue.text(f"on request ({self.requested_by})" +
                                                 (", batch interrupted" if self.interrupted else "")),
                "stopped_after_batch": dg.MetadataValue.int(-1 if self.batch_id is None
                                                            else self.batch_id),
                "stopped_at_offsets": dg.MetadataValue.json(self.offsets)}


def _field(obj, name):
    """A progress field: a dict entry (classic PySpark) or an attribute (Spark Connect)."""
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def end_offsets(progress) -> dict:
    """{topic: {partition: offset}} the batch of a Spark progress report ended at."""
    offsets = {}
    for source in _field(progress, "sources") or []:
        end = _field(source, "endOffset")
        end = json.loads(end) if isinstance(end, str) else end
        offsets.update(end or {})
    return offsets


def drain_and_stop(engine: Engine, stop: Stop) -> None:
    """Stop every active stream of the run's session once its current trigger has finished."""
    for stream in list(engine.spark.streams.active):
        if not engine.finish_trigger(stream):
            stop.interrupted = True
        progress = stream.lastProgress
        if progress is not None:
            stop.batch_id = _field(progress, "batchId")
            stop.offsets.update(end_offsets(progress))
        stream.stop()


_DONE = object()  # the engine's run has returned or raised


def _next(updates: queue.Queue):
    """The next progress report, _DONE, or None when none came within POLL_S."""
    try:
        return updates.get(timeout=POLL_S)
    except queue.Empty:
        return None


def run_query(context: dg.AssetExecutionContext, engine: Engine, query: Query, mode: str,
              stop_after_s: float | None, on_data_loss: str | None):
    """Yields progress observations; returns (RunReport, Stop | None)."""
    updates: queue.Queue = queue.Queue()
    outcome: dict = {}

    def work() -> None:
        try:
            context.log.info(engine.output_notice(query))
            # The engine may pass the same (mutable) report each time: queue a snapshot.
            outcome["report"] = engine.run(
                query, mode=mode, stop_after_s=stop_after_s, on_data_loss=on_data_loss or None,
                on_progress=lambda report: updates.put(dataclasses.replace(report)))
        except BaseException as error:  # re-raised in the step's thread below
            outcome["error"] = error
        finally:
            updates.put(_DONE)

    threading.Thread(target=work, name=f"streamjoin-{query.name}", daemon=True).start()
    stop = None
    while (update := _next(updates)) is not _DONE:
        if update is not None:
            yield dg.AssetObservation(asset_key=query_key(query), metadata=report_metadata(update))
        requested = context.instance.get_run_by_id(context.run.run_id).tags.get(STOP_TAG)
        if requested:  # again each time: a sub-topology may start after the first stop
            if stop is None:
                context.log.info(f"stop requested ({requested}): draining the current batch")
                stop = Stop(requested)
            drain_and_stop(engine, stop)
    if "error" in outcome:
        raise _as_failure(outcome["error"])
    return outcome["report"], stop


def _as_failure(error: BaseException) -> BaseException:
    """The engine's own errors (the brokers gone, data loss, a failed query) say what happened in
    one line: the run fails with that line, not a Python traceback; anything else as it is."""
    if type(error).__module__.startswith("streamjoin."):
        return dg.Failure(description=str(error))
    return error
