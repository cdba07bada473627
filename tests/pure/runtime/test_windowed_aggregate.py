"""Windowed GROUP BY (ksqlDB `WINDOW TUMBLING|HOPPING (...)`): which windows a row counts in, the
windowed result key, late rows, HAVING, and EMIT FINAL's one row per window when it closes."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.runner.cases import Case as SqlCase
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case

SETUP = ["CREATE STREAM clicks (user STRING KEY, page STRING) WITH (kafka_topic='clicks', value_format='JSON');"]


@dataclass
class Case:
    window: str  # the WINDOW clause
    rows: list[tuple[int, str]]  # (ts, user) in arrival order
    expected: list[tuple]  # (user, window start, window end, count, ts); count None: a deletion
    tail: str = ""  # after GROUP BY (HAVING, EMIT FINAL)


CASES = {
    # tumbling 10 s: a row counts in one window; a row later than end + grace (2 s) is dropped
    "tumbling": Case("TUMBLING (SIZE 10 SECONDS, GRACE PERIOD 2 SECONDS)",
                     [(1000, "a"), (9000, "a"), (10000, "a"), (13000, "b"), (4000, "a")],
                     [("a", 0, 10000, 1, 1000), ("a", 0, 10000, 2, 9000), ("a", 10000, 20000, 1, 10000),
                      ("b", 10000, 20000, 1, 13000)]),
    # hopping 10 s every 5 s: a row counts in the two windows that hold it
    "hopping": Case("HOPPING (SIZE 10 SECONDS, ADVANCE BY 5 SECONDS)", [(7000, "a")],
                    [("a", 0, 10000, 1, 7000), ("a", 5000, 15000, 1, 7000)]),
    # HAVING withholds a window's row until it passes
    "having": Case("TUMBLING (SIZE 10 SECONDS)", [(1, "a"), (2, "a"), (3, "a")],
                   [("a", 0, 10000, 2, 2), ("a", 0, 10000, 3, 3)], "HAVING COUNT(*) > 1"),
    # EMIT FINAL: each window once, when stream time reaches its end + grace
    "emit final": Case("TUMBLING (SIZE 10 SECONDS, GRACE PERIOD 0 SECONDS)",
                       [(1000, "a"), (2000, "b"), (3000, "a"), (10000, "c"), (25000, "c")],
                       [("a", 0, 10000, 2, 3000), ("b", 0, 10000, 1, 2000), ("c", 10000, 20000, 1, 10000)],
                       "EMIT FINAL"),
}


@pytest.mark.parametrize("name", CASES)
def test_windowed_aggregate(name):
    case = CASES[name]
    sql = (f"CREATE TABLE counts AS SELECT user, COUNT(*) AS n FROM clicks WINDOW {case.window} "
           f"GROUP BY user {case.tail};")
    inputs = [{"source": "clicks", "ts": ts, "key": user, "value": {"page": "p"}}
              for ts, user in case.rows]
    sql_case = SqlCase.from_json({"id": name, "dialect": "ksqldb", "setup": SETUP, "sql": sql,
                                  "inputs": inputs, "expected": []})
    (records,) = run_locally(sql_case, plan_case(sql_case, "")).values()
    assert [(r.key, *r.window, r.value and r.value["N"], r.ts) for r in records] == case.expected


USERS = "CREATE TABLE users (user STRING PRIMARY KEY, region STRING) WITH (kafka_topic='users', value_format='JSON');"


# `at`: the text the error points at (an AggregationWindow is positioned at its gap)
@pytest.mark.parametrize("sql, rule, at", [
    ("SELECT user, COUNT(*) FROM clicks GROUP BY user EMIT FINAL", "emit-final", "EMIT"),
    ("SELECT user FROM clicks WINDOW TUMBLING (SIZE 1 SECOND)", "window-without-group-by", "user"),
    ("SELECT user FROM clicks WINDOW SESSION (1 SECOND)", "window-without-group-by", "user"),
    # a session's bounds are its rows' times: a table's changelog cannot say which to shrink
    ("SELECT region, COUNT(*) FROM users WINDOW SESSION (30 SECONDS) GROUP BY region", "session-window", "30 SECONDS"),
    # a stream-table join's result is a stream
    (("SELECT u.region, COUNT(*) FROM clicks c JOIN users u ON c.user = u.user WINDOW SESSION (30 SECONDS) "
     "GROUP BY u.region"), None, None),
    ("SELECT user, COUNT(*) FROM clicks WINDOW SESSION (0 SECONDS) GROUP BY user", "session-window", "0 SECONDS"),
])
def test_window_rules(sql, rule, at):
    from streamjoin.dialect import StreamJoinError
    from streamjoin.plan import plan_program
    from streamjoin.runner.planned import case_catalog

    catalog = case_catalog(SqlCase.from_json({"id": "c", "dialect": "ksqldb", "setup": SETUP + [USERS], "sql": ""}))
    statement = f"CREATE TABLE t AS {sql};"
    if rule is None:
        assert plan_program(statement, catalog, "ksqldb").queries
        return
    with pytest.raises(StreamJoinError) as caught:
        plan_program(statement, catalog, "ksqldb")
    assert (caught.value.rule, caught.value.line, caught.value.col) == (rule, 1, statement.index(at) + 1)


@pytest.mark.parametrize("window", ["TUMBLING (SIZE 10 SECONDS, GRACE PERIOD 2 SECONDS)",
                                    "SESSION (10 SECONDS, GRACE PERIOD 2 SECONDS)"])
def test_late_rows_are_in_the_task_counts(window):
    # a@1, b@30, a@4 (seconds): a's window (or session) closed at 12, so a@4 is late; the run
    # report reads the task's counters
    from streamjoin.kafka.records import place
    from streamjoin.runtime.contract import InputRow

    inputs = [{"source": "clicks", "ts": ts, "key": user, "value": {"page": "p"}}
              for ts, user in [(1000, "a"), (30000, "b"), (4000, "a")]]
    sql_case = SqlCase.from_json({"id": "late", "dialect": "ksqldb", "setup": SETUP, "inputs": inputs,
                                  "sql": f"CREATE TABLE t AS SELECT user, COUNT(*) AS n FROM clicks WINDOW {window} "
                                         "GROUP BY user;"})
    planned = plan_case(sql_case, "")
    runtime = planned.queries[0].factory(0)
    for offset, record in enumerate(sql_case.inputs):
        placed = place(*planned.input_target(record), sequence=offset)
        runtime.process(InputRow(placed.topic, placed.partition, offset, placed.record.timestamp_ms,
                                 placed.record.key, placed.record.value))
    assert runtime.counters()["late"] == 1
