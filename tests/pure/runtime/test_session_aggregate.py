"""Session-windowed GROUP BY (ksqlDB `WINDOW SESSION (gap, ...)`), through SQL and the compiled
runtime: which session a row joins, merges, the tombstones of replaced sessions, out-of-order and
late rows, HAVING and EMIT FINAL. Times in the tables are seconds (rows are produced in ms)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import sqlglot
from sqlglot import exp

from streamjoin.dialect import StreamJoinError
from streamjoin.expr.accumulators import ACCUMULATORS, Accumulator, Max
from streamjoin.expr.aggregates import compile_aggregates
from streamjoin.expr.compile import Scope
from streamjoin.operators.base import RowKind, Side
from streamjoin.plan.nodes import GroupWindow
from streamjoin.runner.cases import Case as SqlCase
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case
from streamjoin.runtime.sessions import SessionAggregateStage
from streamjoin.runtime.stages import Event
from streamjoin.spark.paged_state import load_runtime, save_runtime
from tests.pure.spark.test_paged_state import DictPages

SETUP = [("CREATE STREAM clicks (user STRING KEY, page STRING, amount INT) "
          "WITH (kafka_topic='clicks', value_format='JSON');")]
SELECT = ("COUNT(*) AS n, SUM(amount) AS total, MIN(amount) AS lo, MAX(amount) AS hi, "
          "COUNT(DISTINCT page) AS pages")
DAY = 86_400


@dataclass
class Case:
    inputs: list[tuple]  # (ts, user[, amount[, page]]) in arrival order
    expected: list[tuple]  # (user, start, end, value, ts): value = the checked columns, None = tombstone
    window: str = "SESSION (10 SECONDS, GRACE PERIOD 5 SECONDS)"
    tail: str = ""  # after GROUP BY (HAVING, EMIT FINAL)
    columns: tuple[str, ...] = ("N",)  # the value columns `expected` checks


CASES = {
    # the worked timeline of streamjoin.runtime.sessions and docs/semantics.md, row by row
    "timeline": Case([(0, "a"), (8, "a"), (5, "a"), (30, "a"), (22, "a"), (44, "a"), (38, "a"), (10, "a")],
                     [("a", 0, 0, 1, 0), ("a", 0, 0, None, 0), ("a", 0, 8, 2, 8), ("a", 0, 8, None, 8),
                      ("a", 0, 8, 3, 8), ("a", 30, 30, 1, 30), ("a", 30, 30, None, 30), ("a", 22, 30, 2, 30),
                      ("a", 44, 44, 1, 44), ("a", 22, 30, None, 30), ("a", 44, 44, None, 44),
                      ("a", 22, 44, 4, 44)]),
    # a@0 new [0,0] | a@8 within 10 s: [0,0] stretches to [0,8] | a@5 inside [0,8]: replaced too
    "stretch and inside": Case([(0, "a"), (8, "a"), (5, "a")],
                               [("a", 0, 0, 1, 0), ("a", 0, 0, None, 0), ("a", 0, 8, 2, 8),
                                ("a", 0, 8, None, 8), ("a", 0, 8, 3, 8)]),
    # a second row at the instant of a one-row session overwrites it: no tombstone
    "same instant": Case([(1, "a"), (1, "a")], [("a", 1, 1, 1, 1), ("a", 1, 1, 2, 1)]),
    # exactly the gap apart joins; 11 s after the end starts a new session
    "gap boundary": Case([(0, "a"), (10, "a"), (21, "a")],
                         [("a", 0, 0, 1, 0), ("a", 0, 0, None, 0), ("a", 0, 10, 2, 10), ("a", 21, 21, 1, 21)]),
    # a@30 then a@22 (out of order): the session's start moves back; its ts stays its end
    "out of order": Case([(30, "a"), (22, "a")],
                         [("a", 30, 30, 1, 30), ("a", 30, 30, None, 30), ("a", 22, 30, 2, 30)]),
    # [0,0] and [20,20] are 20 s apart; a@10 is within 10 s of both: one session, the partial
    # aggregates merged (COUNT, SUM, MIN, MAX, COUNT(DISTINCT) over all three rows). Grace 30 s
    # keeps [0,0] open at stream time 20 (with grace 5 it closes at 15)
    "bridge merges": Case([(0, "a", 5, "x"), (20, "a", 1, "y"), (10, "a", 7, "x")],
                          [("a", 0, 0, (1, 5, 5, 5, 1), 0), ("a", 20, 20, (1, 1, 1, 1, 1), 20),
                           ("a", 0, 0, None, 0), ("a", 20, 20, None, 20), ("a", 0, 20, (3, 13, 1, 7, 2), 20)],
                          window="SESSION (10 SECONDS, GRACE PERIOD 30 SECONDS)",
                          columns=("N", "TOTAL", "LO", "HI", "PAGES")),
    # ... with grace 5, [0,0] closed at stream time 20: a@10 only stretches [20,20]
    "no bridge to a closed session": Case([(0, "a"), (20, "a"), (10, "a")],
                                          [("a", 0, 0, 1, 0), ("a", 20, 20, 1, 20), ("a", 20, 20, None, 20),
                                           ("a", 10, 20, 2, 20)]),
    # sessions are per group key: b's row never touches a's session
    "per key": Case([(0, "a"), (5, "b"), (6, "a")],
                    [("a", 0, 0, 1, 0), ("b", 5, 5, 1, 5), ("a", 0, 0, None, 0), ("a", 0, 6, 2, 6)]),
    # gap 10 + grace 5: at stream time 30 a row is late when its session ends before 15;
    # a@14 alone is late (dropped), a@15 is not
    "late": Case([(0, "a"), (30, "b"), (14, "a"), (15, "a")],
                 [("a", 0, 0, 1, 0), ("b", 30, 30, 1, 30), ("a", 15, 15, 1, 15)]),
    # ... but a row before that point still joins a session that ends after it: a@21 at stream
    # time 40 (late point 25) stretches [30,30] back to [21,30]
    "old row joins an open session": Case([(30, "a"), (40, "b"), (21, "a")],
                                          [("a", 30, 30, 1, 30), ("b", 40, 40, 1, 40), ("a", 30, 30, None, 30),
                                           ("a", 21, 30, 2, 30)]),
    # no GRACE PERIOD: a day minus the gap, so a session closes a day after its end; a@0 at
    # stream time DAY - 1 ms still joins [0,0]; at DAY + 1 ms (b's second row) it is late
    "default grace": Case([(0, "a"), (DAY - 0.001, "b"), (0, "a"), (DAY + 0.001, "b"), (0, "a")],
                          [("a", 0, 0, 1, 0), ("b", DAY - 0.001, DAY - 0.001, 1, DAY - 0.001), ("a", 0, 0, 2, 0),
                           ("b", DAY - 0.001, DAY - 0.001, None, DAY - 0.001),
                           ("b", DAY - 0.001, DAY + 0.001, 2, DAY + 0.001)],
                          window="SESSION (10 SECONDS)"),
    # the instant a session closes (stream time = end + gap + grace = 0 + 10 + 5), a row at its
    # end is not late but no longer joins it: a new [0,0] of its own
    "closed at end + gap + grace": Case([(0, "a"), (15, "b"), (0, "a")],
                                        [("a", 0, 0, 1, 0), ("b", 15, 15, 1, 15), ("a", 0, 0, 1, 0)]),
    # HAVING: [0,0] (total 5) is out; a@5 makes [0,5] with total 12, which fails: [0,0] is
    # deleted and [0,5] never comes out; b's session, never out, is not deleted
    "having": Case([(0, "a", 5), (5, "a", 7), (0, "b", 50)],
                   [("a", 0, 0, 1, 0), ("a", 0, 0, None, 0)], tail="HAVING SUM(amount) < 10"),
    # EMIT FINAL, grace 0: a session comes out once, when stream time reaches end + gap: a's
    # [0,5] at 15 (c's row), b's [6,6] (16) and c's [15,15] (25) at 30; a's [30,30] stays
    "emit final": Case([(0, "a"), (5, "a"), (6, "b"), (15, "c"), (30, "a")],
                       [("a", 0, 5, 2, 5), ("b", 6, 6, 1, 6), ("c", 15, 15, 1, 15)],
                       window="SESSION (10 SECONDS, GRACE PERIOD 0 SECONDS)", tail="EMIT FINAL"),
    # EMIT FINAL of merged sessions: only the merged one, once, when stream time reaches
    # 20 + 10 + 30 (z@59 does not close it, z@60 does)
    "emit final merged": Case([(0, "a", 1), (20, "a", 2), (10, "a", 3), (59, "z", 0), (60, "z", 0)],
                              [("a", 0, 20, (3, 6), 20)], window="SESSION (10 SECONDS, GRACE PERIOD 30 SECONDS)",
                              tail="EMIT FINAL", columns=("N", "TOTAL")),
}


def _ms(seconds: float) -> int:
    return round(seconds * 1000)


def _row(ts: float, user: str, amount: int = 1, page: str = "p") -> dict:
    return {"source": "clicks", "ts": _ms(ts), "key": user, "value": {"page": page, "amount": amount}}


@pytest.mark.parametrize("name", CASES)
def test_session_aggregate(name):
    case = CASES[name]
    sql = f"CREATE TABLE sessions AS SELECT user, {SELECT} FROM clicks WINDOW {case.window} GROUP BY user {case.tail};"
    sql_case = SqlCase.from_json({"id": name, "dialect": "ksqldb", "setup": SETUP, "sql": sql,
                                  "inputs": [_row(*row) for row in case.inputs], "expected": []})
    (records,) = run_locally(sql_case, plan_case(sql_case, "")).values()
    expected = [(user, _ms(start), _ms(end), None if value is None else value if isinstance(value, tuple) else (value,),
                 _ms(ts)) for user, start, end, value, ts in case.expected]
    actual = [(r.key, *r.window, r.value and tuple(r.value[c] for c in case.columns), r.ts) for r in records]
    assert actual == expected
    assert all(r.window_type == "SESSION" for r in records)


def _stage(emit_final: bool = False):
    plan = compile_aggregates([sqlglot.parse_one("COUNT(*) AS n")], Scope({"c": ["user"]}),
                              [exp.column("user", "c")], merging=True)
    return SessionAggregateStage(plan, "OUT", GroupWindow("SESSION", 10, 10, 5, emit_final))


def _event(kind: RowKind, ts: int, user: str | None = "a") -> Event:
    return Event(kind, user, None if user is None else {"c": {"user": user}}, ts)


@dataclass
class StageCase:
    events: list[Event]
    expected: list[tuple]  # (kind, key, N or None, ts)
    metrics: dict


STAGE_CASES = {
    # the planner feeds a session window only streams; a retraction that still arrives cannot say
    # which session to shrink (its ts is the change's): counted, the sessions unchanged
    "retraction": StageCase([_event(RowKind.INSERT, 0), _event(RowKind.UPDATE_BEFORE, 0), _event(RowKind.DELETE, 3)],
                            [(RowKind.UPDATE_AFTER, ("a", 0, 0), 1, 0)], {"window_retraction": 2}),
    # a null-value stream record has no row to aggregate
    "null value": StageCase([_event(RowKind.INSERT, 0, None)], [], {"null_value": 1}),
    # late rows are counted; the stream time they carry still closes sessions
    "late": StageCase([_event(RowKind.INSERT, 30), _event(RowKind.INSERT, 14)],
                      [(RowKind.UPDATE_AFTER, ("a", 30, 30), 1, 30)], {"late": 1}),
}


@pytest.mark.parametrize("name", STAGE_CASES)
def test_session_stage(name):
    case, stage, pages = STAGE_CASES[name], _stage(), DictPages()
    out = []
    for event in case.events:
        out += stage.on_event(event, Side.LEFT)
        stage = load_runtime(save_runtime(stage, pages), pages)  # a checkpoint between micro-batches
    assert [(e.kind, e.key, e.env and e.env["OUT"]["n"], e.ts) for e in out] == case.expected
    assert dict(stage.metrics) == case.metrics




def test_end_of_input_closes_every_session():
    # EMIT FINAL: end of input closes every session, in the order they close (end + gap + grace):
    # b's [3,3] at 18 before a's [0,5] at 20
    stage = _stage(emit_final=True)
    for ts, user in [(0, "a"), (3, "b"), (5, "a")]:
        assert stage.on_event(_event(RowKind.INSERT, ts, user), Side.LEFT) == []
    assert [(e.key, e.env["OUT"]["n"], e.ts) for e in stage.on_end()] == [(("b", 3, 3), 1, 3), (("a", 0, 5), 2, 5)]
    assert len(stage.sessions) == 0


class _NoMerge(Max):
    merge = Accumulator.merge  # an aggregate that cannot combine two partial results


@pytest.mark.parametrize("window, rule", [("SESSION (10 SECONDS)", "session-aggregate"),
                                          ("TUMBLING (SIZE 10 SECONDS)", None)])
def test_an_aggregate_that_cannot_merge_is_rejected_for_sessions_only(monkeypatch, window, rule):
    monkeypatch.setitem(ACCUMULATORS, exp.Max, _NoMerge)
    sql = f"CREATE TABLE t AS SELECT user,\n  COUNT(*) AS n, MAX(amount) AS hi FROM clicks WINDOW {window} GROUP BY user;"
    sql_case = SqlCase.from_json({"id": "c", "dialect": "ksqldb", "setup": SETUP, "sql": sql})
    if rule is None:
        assert plan_case(sql_case, "").queries
        return
    with pytest.raises(StreamJoinError) as caught:
        plan_case(sql_case, "")
    column = sql.splitlines()[1].index("MAX") + 1
    assert (caught.value.rule, caught.value.line, caught.value.col) == (rule, 2, column)
