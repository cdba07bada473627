"""The fast paths of time-bounded stream-stream joins, both inputs' records a run at a time: ksqlDB's
and Lenses' `WITHIN`, Flink's interval join."""

from __future__ import annotations

from streamjoin.operators.interval import IntervalJoin
from streamjoin.operators.stream_stream import StreamStreamJoin
from streamjoin.operators.stream_stream_runs import (StreamStreamInnerRun, StreamStreamIntervalRun,
                                                     takes_interval_runs, takes_runs)
from streamjoin.runtime.sides import TwoSidedPath


class StreamStreamWithin(TwoSidedPath):
    """Both sides of a stream-stream join within a window (`SELECT ... FROM orders o JOIN
    payments p WITHIN 1 HOURS ON o.id = p.id`) followed only by WHERE and the projection.

    The reference path (`PipelineRuntime.process_record`) turns each record into an event, a
    join record, changes, joined events and projected events, walking the pipeline between them,
    and encodes each result on its own. This path takes a run of records of the two topics, in
    the order the task processes them, into the same operator (`StreamStreamJoin.process`: the
    same store, timers and stream time), reading the join key of a one-column key without its
    compiled call (an INNER join on the engine's window stores takes the run in one loop of the
    operator's: `StreamStreamInnerRun`); then filters and projects the changes and encodes the
    run's results together.
    Where every output column is a plain column of either side and nothing filters (`plain`), the
    results are not built as rows: each output column is read for the whole run and written a
    column at a time. A record this path does not cover (one that does not decode, a null value,
    another task's partition) takes the reference path (`TwoSidedPath._join_run`). The reference
    path stays the semantics: `tests/pure/runtime/test_within.py` runs both on randomized inputs
    (late, out-of-order, duplicate timestamps, null keys and values) and compares outputs,
    counters and state.

    Timeline (INNER JOIN WITHIN 10 MILLISECONDS GRACE PERIOD 0 MILLISECONDS, one key; O = orders,
    P = payments; one run, its results encoded together after its last record):

        O a@100                  stored
        P x@105  -> [a,x]@105    within 10 ms of a
        P y@130                  stored; stream time 130
        O b@90                   late: 90 + 10 + 0 < 130, dropped and counted (metrics["late"])
    """

    operator = StreamStreamJoin
    loop = (takes_runs, StreamStreamInnerRun)  # an INNER join on the engine's window stores


class StreamStreamInterval(TwoSidedPath):
    """Both sides of Flink's event-time interval join (`FROM Orders o, Shipments s WHERE o.id =
    s.orderId AND o.ordertime BETWEEN s.shiptime - INTERVAL '4' HOUR AND s.shiptime`, or the same
    as `o JOIN s ON ...`, INNER or outer) followed only by WHERE and the projection.

    The operator (`IntervalJoin`) clocks itself from the records' own times (each side's largest
    time less the sources' watermark delay, the smaller of the two), so it needs no watermark
    passed down the pipeline; a query whose other steps need one (a window after the join) keeps
    the reference path (`TwoSidedPath.feeding`). This path takes a run of both topics' records,
    decoded together, into `IntervalJoin.process` one record at a time, exactly as the reference
    path's join stage does (the same stores, timers and clock; an outer row padded when a later
    record moves the clock past its window goes out with that record), or, without a residual
    condition, in one loop over the whole run (`StreamStreamIntervalRun`); then filters,
    projects and encodes the run's results together, a column at a time on the plain path.
    `tests/pure/runtime/test_within.py` compares both paths on randomized inputs.

    Timeline, `o.t BETWEEN s.t - 4h AND s.t`, LEFT join, delay 0 (hours); one run:

        L o1@10                  stored; clock min(10, -inf): nothing closes
        R s1@13  -> [o1,s1]@13   clock min(10, 13) = 10
        L o2@15                  stored; clock min(15, 13) = 13
        R s9@20                  no order in [16, 20]; clock min(15, 20) = 15
        L o3@21  -> [o2,null]@15 with this record: clock min(21, 20) = 20 closes o2's window [15, 19]
    """

    operator = IntervalJoin
    loop = (takes_interval_runs, StreamStreamIntervalRun)  # without a residual condition
