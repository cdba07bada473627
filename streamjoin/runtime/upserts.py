"""The fast path of primary-key table-table joins (ksqlDB `CREATE TABLE ... FROM t1 JOIN t2`,
Lenses `SELECT TABLE ... FROM t1 JOIN t2`): both tables' upserts and tombstones a run at a time."""

from __future__ import annotations

from streamjoin.operators.table_table import TableTableJoin
from streamjoin.operators.table_table_runs import TableTableRun, takes_runs
from streamjoin.runtime.bindings import Runtime
from streamjoin.runtime.sides import TwoSidedPath
from streamjoin.runtime.stages import JoinStage


class TableTableUpserts(TwoSidedPath):
    """Both sides of a primary-key table-table join followed only by WHERE and the projection,
    its results written to an upsert topic (no retractions: ksqlDB's and Lenses' tables).

    The reference path (`PipelineRuntime.process_record`) turns each record into an event, a
    join record, the result's change, a joined event and a projected event, walking the pipeline
    between them, and encodes each result on its own. This path takes a run of records of the
    two topics, in the order the task processes them, into the same operator
    (`TableTableJoin.process`: the same two tables), reading the join key of a one-column key
    without its compiled call; then filters and projects the results and encodes the run's
    results together, a tombstone of a result's key as the reference path writes it. Where every
    output column is a plain column of either side and nothing filters (`plain`), the results
    are not built as rows: each output column is read for the whole run and written a column at
    a time. A tombstone is an update like any other here; a record this path does not cover (one
    that does not decode, another task's partition) changes neither table, so it takes the
    reference path wherever it stands in the run. The reference path stays the semantics:
    `tests/pure/runtime/test_upserts.py` runs both on randomized changelogs (tombstones, NULL
    keys, out-of-order and repeated times, bad records) and compares outputs, counters and state.

    Timeline (ksqlDB, `l LEFT JOIN r`, one key k; L = the left table's topic, R = the right's;
    one run, its results encoded together after its last record):

        L k=A@1          -> k: {A, null}@1     the result row is new
        R k=a@3          -> k: {A, a}@3
        L k=tombstone@2  -> k: tombstone@3     the result's time is the later of its rows'
        R k=tombstone@4  -> nothing            no result row was left to delete
    """

    takes_tombstones = True
    operator = TableTableJoin
    loop = (takes_runs, TableTableRun)  # without a residual condition

    @classmethod
    def takes(cls, runtime: Runtime, join: JoinStage) -> bool:
        """Where neither the join nor the sink writes retractions (Flink's changelog)."""
        return not (join.processor.config.emit_retractions or runtime.sink.emit_retractions)
