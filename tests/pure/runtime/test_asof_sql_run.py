"""ASOF JOIN through SQL, end to end in-process (plan, compile, decode, operator, project, encode;
no Spark, no broker): own trades and quotes, hand-worked results. The integration test
(tests/integration/test_asof_spark.py) runs one of these cases through Kafka and Spark.

Quotes (keyed by sym, event time qt) and trades (keyed by tid, event time tt), times in seconds,
listed in arrival order. The order is the one a task's timestamp merge gives (Kafka Streams),
so the real path delivers it in one run. W = the join's watermark = min(max trade time, max
quote time) just after the record (watermark delays 0).

    #   record            W    note
    1   quote A 100 @10   -
    2   trade t1 A @12    10
    3   trade t2 B @14    10
    4   quote B  50 @15   14
    5   trade t3 A @25    15
    6   trade t4 C @26    15   C has no quote at all
    7   trade t5 A @27    15
    8   quote A 110 @30   27
    9   quote A 105 @20   27   late (20 < 27): stored, still serves rows not yet final
    10  trade t6 A @32    30
    11  trade t7 A @22    30   late (22 < 30): dropped
    12  trade t8 B @36    30
    13  quote B  55 @40   36
        end of input      end  every waiting trade is final
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.runner.cases import Case
from streamjoin.runner.arrival import Arrival, arrival_segments
from streamjoin.runner.compare import compare
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case
from streamjoin.kafka.records import place

SOURCES = [
    {"name": "trades", "kind": "stream", "topic": "trades", "partitions": 1, "key": ["tid"],
     "columns": {"tid": "STRING", "sym": "STRING", "tt": "BIGINT"}, "timestamp": "tt"},
    {"name": "quotes", "kind": "stream", "topic": "quotes", "partitions": 1, "key": ["sym"],
     "columns": {"sym": "STRING", "bid": "INT", "qt": "BIGINT"}, "timestamp": "qt"},
]


def _quote(sym, bid, second):  # qt is the event time: the runner fills it from ts
    return {"source": "quotes", "ts": second * 1000, "key": sym, "value": {"bid": bid}}


def _trade(tid, sym, second):
    return {"source": "trades", "ts": second * 1000, "key": tid, "value": {"sym": sym}}


INPUTS = [_quote("A", 100, 10), _trade("t1", "A", 12), _trade("t2", "B", 14), _quote("B", 50, 15),
          _trade("t3", "A", 25), _trade("t4", "C", 26), _trade("t5", "A", 27), _quote("A", 110, 30),
          _quote("A", 105, 20), _trade("t6", "A", 32), _trade("t7", "A", 22), _trade("t8", "B", 36),
          _quote("B", 55, 40)]


@dataclass
class Run:
    flavour: str
    sql: str
    expected: list[tuple[str, int | None, int]]  # (tid, bid, ts in seconds), in emission order


RUNS = {
    # Latest quote at or before the trade. t3 is final at #8 (W 27 > 25), before the late A@20
    # arrives, so it gets A@10; t5 (27) is final at #10 and gets the late A@20.
    "ge_left": Run("flink", "SELECT t.tid, q.bid FROM trades t LEFT OUTER ASOF JOIN quotes q "
                   "MATCH_CONDITION (t.tt >= q.qt) ON t.sym = q.sym",
                   [("t1", 100, 12), ("t2", None, 14), ("t3", 100, 25), ("t4", None, 26),
                    ("t5", 105, 27), ("t6", 110, 32), ("t8", 50, 36)]),
    # The same, INNER and written mirrored (q.qt <= t.tt): unmatched t2 and t4 are dropped.
    "ge_inner_mirrored": Run("ksqldb", "SELECT t.tid, q.bid FROM trades t ASOF JOIN quotes q "
                             "MATCH_CONDITION (q.qt <= t.tt) ON t.sym = q.sym",
                             [("t1", 100, 12), ("t3", 100, 25), ("t5", 105, 27), ("t6", 110, 32), ("t8", 50, 36)]),
    # The ON residual is checked on the one quote the match picks; a rejected pick is not
    # replaced by an older quote (t1, t3 and t8 are padded).
    "ge_left_residual": Run("flink", "SELECT t.tid, q.bid FROM trades t LEFT ASOF JOIN quotes q "
                            "MATCH_CONDITION (t.tt >= q.qt) ON t.sym = q.sym AND q.bid >= 105",
                            [("t1", None, 12), ("t2", None, 14), ("t3", None, 25), ("t4", None, 26),
                             ("t5", 105, 27), ("t6", 110, 32), ("t8", None, 36)]),
    # Earliest quote at or after the trade: a trade waits until its closest later quote is
    # behind W. t2 -> B@15 at #8; t1 -> the late A@20 at #9; t3, t5 -> A@30 at #13 (30 < 36);
    # at the end t4 (no C) and t6 (no A after 32) are padded, t8 -> B@40.
    "le_left": Run("lenses", "SELECT STREAM t.tid, q.bid FROM trades t ASOF LEFT JOIN quotes q "
                   "MATCH_CONDITION (t.tt <= q.qt) ON t.sym = q.sym",
                   [("t2", 50, 14), ("t1", 105, 12), ("t3", 110, 25), ("t5", 110, 27),
                    ("t4", None, 26), ("t6", None, 32), ("t8", 55, 36)]),
    # The same INNER, on ROWTIME (the record time the timestamp columns set).
    "le_inner_rowtime": Run("sqlstream", "SELECT STREAM t.tid, q.bid FROM trades t ASOF JOIN quotes q "
                            "MATCH_CONDITION (t.ROWTIME <= q.ROWTIME) ON t.sym = q.sym",
                            [("t2", 50, 14), ("t1", 105, 12), ("t3", 110, 25), ("t5", 110, 27), ("t8", 55, 36)]),
    # No ON: one key for everything, the latest quote of any symbol strictly before the trade.
    # t2 (14) -> A@10, not B@15; t3, t4 -> B@15; t5 -> the late A@20; t6, t8 -> A@30.
    "gt_no_keys": Run("flink", "SELECT t.tid, q.bid FROM trades t ASOF JOIN quotes q MATCH_CONDITION (t.tt > q.qt)",
                      [("t1", 100, 12), ("t2", 100, 14), ("t3", 50, 25), ("t4", 50, 26),
                       ("t5", 105, 27), ("t6", 110, 32), ("t8", 110, 36)]),
}


def asof_case(name: str) -> Case:
    run = RUNS[name]
    upper = run.flavour in ("ksqldb", "sqlstream")  # unquoted output names in upper case
    tid, bid = ("TID", "BID") if upper else ("tid", "bid")
    expected = [{"ts": s * 1000, "value": {tid: t, bid: b}} for t, b, s in run.expected]
    return Case.from_json({"id": f"asof.{name}", "dialect": run.flavour, "sql": run.sql, "sources": SOURCES,
                           "settings": {"flush_at_end": True}, "inputs": INPUTS, "expected": expected,
                           "compare": "ordered"})


@pytest.mark.parametrize("name", RUNS)
def test_asof_query_in_process(name):
    case = asof_case(name)
    planned = plan_case(case, topic_prefix="local.")
    outputs = run_locally(case, planned)
    for topic, expected in planned.expected_by_topic(case.expected).items():
        assert compare(expected, outputs[topic], ordered=True) is None, outputs[topic]


def test_inputs_reach_the_real_path_in_one_run():
    """The arrival order above is the timestamp merge a task does, so run-cases produces all
    inputs at once and runs the query once (the integration test relies on it)."""
    case = asof_case("ge_left")
    planned = plan_case(case, topic_prefix="local.")
    placed = [place(*planned.input_target(r), sequence=i) for i, r in enumerate(case.inputs)]
    arrivals = [Arrival(i, p.partition, (p.topic, p.partition), p.record.timestamp_ms) for i, p in enumerate(placed)]
    assert len(arrival_segments(arrivals)) == 1
