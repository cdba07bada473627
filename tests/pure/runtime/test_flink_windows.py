"""Flink windowing end to end in-process: window assignment (TUMBLE / HOP / CUMULATE, offsets,
TIMESTAMP_LTZ in the session time zone), window aggregation and window joins emitted when the
watermark passes the window end (not before, not only at the end of input), late rows dropped."""

from __future__ import annotations

import pytest

from streamjoin.dialect import StreamJoinError
from streamjoin.kafka.records import place
from streamjoin.plan import WindowSpec, WindowTvfJoin, explain, plan_program
from streamjoin.runner.cases import Case
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import case_catalog, plan_case
from streamjoin.runtime.contract import InputRow
from streamjoin.runtime.windows import windows_of, zone_offset
from tests.pure.runtime.sql_case import row, run_sql, source, values

S = 1000


@pytest.mark.parametrize("spec, t, expected", [
    (WindowSpec("TUMBLE", 5 * S, 5 * S), 6 * S, [(5, 10)]),
    (WindowSpec("TUMBLE", 5 * S, 5 * S, 1 * S), 6 * S, [(6, 11)]),
    (WindowSpec("TUMBLE", 5 * S, 5 * S, -1 * S), 6 * S, [(4, 9)]),
    (WindowSpec("TUMBLE", 5 * S, 5 * S), 5 * S, [(5, 10)]),  # the end is exclusive
    (WindowSpec("HOP", 4 * S, 2 * S), 5 * S, [(2, 6), (4, 8)]),
    (WindowSpec("HOP", 4 * S, 2 * S), 4 * S, [(2, 6), (4, 8)]),
    (WindowSpec("CUMULATE", 6 * S, 2 * S), 3 * S, [(0, 4), (0, 6)]),
    (WindowSpec("CUMULATE", 6 * S, 2 * S), 4 * S, [(0, 6)]),
    (WindowSpec("TUMBLE", 5 * S, 5 * S), -1 * S, [(-5, 0)]),
])
def test_windows_of(spec, t, expected):
    assert windows_of(spec, t) == [(a * S, b * S) for a, b in expected]


def test_zone_offset_follows_daylight_saving():
    berlin = zone_offset("Europe/Berlin")
    assert (berlin(0), berlin(1_593_561_600_000)) == (3_600_000, 7_200_000)  # 1970-01-01, 2020-07-01


T = [source(n, {"name": "STRING", "v": "INT", "rowtime": "TIMESTAMP(3)"}, timestamp="rowtime") for n in ("T1", "T2")]


def _row(name, second, who, v=1):
    return row(name, int(second * S), {"name": who, "v": v, "rowtime": f"1970-01-01 00:00:{second:06.3f}"})


COUNTS = ("SELECT name, window_start, window_end, COUNT(*) AS n, SUM(v) AS total FROM TABLE(TUMBLE(TABLE T1, "
          "DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) GROUP BY name, window_start, window_end")


def test_window_aggregate_emits_each_window_once_final():
    out = values(run_sql(COUNTS, T, [_row("T1", 1, "a"), _row("T1", 2, "a", 2), _row("T1", 3, "b"), _row("T1", 6, "a")]))
    assert out == [
        {"name": "a", "window_start": "1970-01-01 00:00:00.000", "window_end": "1970-01-01 00:00:05.000", "n": 2, "total": 3},
        {"name": "b", "window_start": "1970-01-01 00:00:00.000", "window_end": "1970-01-01 00:00:05.000", "n": 1, "total": 1},
        {"name": "a", "window_start": "1970-01-01 00:00:05.000", "window_end": "1970-01-01 00:00:10.000", "n": 1, "total": 1}]


def test_window_aggregate_having_filters_each_window_s_groups():
    rows = [_row("T1", 1, "a"), _row("T1", 2, "a", 2), _row("T1", 3, "b"), _row("T1", 6, "a")]
    out = values(run_sql(COUNTS + " HAVING COUNT(*) > 1", T, rows))
    assert [(r["name"], r["window_start"], r["n"]) for r in out] == [("a", "1970-01-01 00:00:00.000", 2)]


def _unflushed(sql, inputs, settings=None):
    """Outputs and counters without the end-of-input flush: only what watermarks emitted."""
    case = Case.from_json({"id": "w", "dialect": "flink", "sql": sql, "sources": T, "inputs": inputs,
                           "settings": settings or {}})
    planned = plan_case(case, topic_prefix="u.")
    [records] = run_locally(case, planned).values()
    return [r.value for r in records]


def test_a_window_is_emitted_when_the_watermark_passes_its_end():
    # Watermark delay 1 s. [0, 5) fires once the watermark reaches its last ms, 4.999 s: a@5.998
    # (watermark 4.998) is not enough, a@5.999 is; [5, 10) stays open without the end of input.
    inputs = [_row("T1", 1, "a"), _row("T1", 4.999, "a"), _row("T1", 5.998, "a"), _row("T1", 5.999, "a")]
    delay = {"watermark_delay_ms": {"T1": 1000}}
    assert _unflushed(COUNTS, inputs[:3], delay) == []
    assert [(r["window_start"], r["n"]) for r in _unflushed(COUNTS, inputs, delay)] == [("1970-01-01 00:00:00.000", 2)]


def test_late_rows_are_dropped_and_counted():
    # a@8 (watermark 8) closes [0, 5); a@3 afterwards belongs to it: late, dropped, counted.
    case = Case.from_json({"id": "l", "dialect": "flink", "sql": COUNTS, "sources": T, "settings": {"flush_at_end": True},
                           "inputs": [_row("T1", 1, "a"), _row("T1", 8, "a"), _row("T1", 3, "a")]})
    planned = plan_case(case, topic_prefix="l.")
    runtime = planned.queries[0].factory(0)
    for i, record in enumerate(case.inputs):
        p = place(*planned.input_target(record), sequence=i)
        runtime.process(InputRow(p.topic, 0, i, p.record.timestamp_ms, p.record.key, p.record.value))
    runtime.end_of_input()
    assert runtime.counters()["late"] == 1


WINDOW_JOIN = ("SELECT L.name, L.window_start, L.n AS ln, R.n AS rn FROM ({0}) L {1} JOIN ({2}) R "
               "ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.name = R.name")


@pytest.mark.parametrize("join, expected", [
    ("", [("a", 0, 2, 1)]),
    ("FULL", [("a", 0, 2, 1), ("b", 0, 1, None), (None, None, None, 1)]),
])
def test_window_join_of_window_aggregates(join, expected):
    per_window = "SELECT name, window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE {0}, DESCRIPTOR(" \
                 "rowtime), INTERVAL '5' SECOND)) GROUP BY name, window_start, window_end"
    sql = WINDOW_JOIN.format(per_window.format("T1"), join, per_window.format("T2"))
    inputs = [_row("T1", 1, "a"), _row("T1", 2, "a"), _row("T1", 3, "b"), _row("T2", 1, "a"), _row("T2", 7, "c")]
    out = [(r["name"], r["window_start"] and int(r["window_start"][-6:-4]), r["ln"], r["rn"]) for r in values(run_sql(sql, T, inputs))]
    assert sorted(out, key=str) == sorted(expected, key=str)


def test_hop_window_join_of_rows_and_semi_join():
    # HOP(2 s, 4 s): a@3 is in [0, 4) and [2, 6), b@5 in [2, 6) and [4, 8); each window joined once.
    tvf = "TABLE(HOP(TABLE {0}, DESCRIPTOR(rowtime), INTERVAL '2' SECOND, INTERVAL '4' SECOND))"
    sql = (f"SELECT L.v AS lv, R.v AS rv, L.window_start FROM {tvf.format('T1')} L JOIN {tvf.format('T2')} R "
           "ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.name = R.name")
    inputs = [_row("T1", 3, "a", 1), _row("T2", 5, "a", 2)]
    assert [(r["lv"], r["rv"], r["window_start"]) for r in values(run_sql(sql, T, inputs))] == [
        (1, 2, "1970-01-01 00:00:02.000")]
    semi = (f"SELECT v FROM {tvf.format('T1')} L WHERE EXISTS (SELECT * FROM {tvf.format('T2')} R WHERE "
            "L.window_start = R.window_start AND L.window_end = R.window_end)")
    assert values(run_sql(semi, T, inputs)) == [{"v": 1}]


def test_ltz_windows_are_aligned_in_the_session_time_zone():
    # A day window over TIMESTAMP_LTZ: 1970-01-01 23:30 UTC is 01-02 00:30 in UTC+1 (Berlin).
    sources = [source("E", {"v": "INT", "t": "TIMESTAMP_LTZ(3)"}, timestamp="t")]
    sql = ("SELECT window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE E, DESCRIPTOR(t), "
           "INTERVAL '1' DAY)) GROUP BY window_start, window_end")
    inputs = [row("E", 84_600_000, {"v": 1, "t": "1970-01-01 23:30:00.000"})]
    assert values(run_sql(sql, sources, inputs, settings={"table.local-time-zone": "Europe/Berlin"})) == [
        {"window_start": "1970-01-02 00:00:00.000", "window_end": "1970-01-03 00:00:00.000", "n": 1}]


def _plan(sql):
    case = Case.from_json({"id": "p", "dialect": "flink", "sql": "", "sources": T})
    return plan_program(sql, case_catalog(case), "flink").queries[0]


def test_plans_a_window_join():
    tvf = "TABLE(TUMBLE(TABLE {0}, DESCRIPTOR(rowtime), INTERVAL '5' SECOND))"
    query = _plan(f"SELECT L.v FROM {tvf.format('T1')} L JOIN {tvf.format('T2')} R "
                  "ON L.window_start = R.window_start AND L.window_end = R.window_end")
    join = query.project.child
    assert isinstance(join, WindowTvfJoin) and join.window == WindowSpec("TUMBLE", 5000, 5000)
    assert (join.left_window_end.sql(), join.right_window_end.sql()) == ("L.window_end", "R.window_end")


@pytest.mark.parametrize("sql, message", [
    ("SELECT L.v FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) L JOIN TABLE(TUMBLE("
     "TABLE T2, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) R ON L.window_start = R.window_start", "both window_start"),
    ("SELECT L.v FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) L JOIN TABLE(TUMBLE("
     "TABLE T2, DESCRIPTOR(rowtime), INTERVAL '6' SECOND)) R ON L.window_start = R.window_start AND "
     "L.window_end = R.window_end", "same windows"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(v), INTERVAL '5' SECOND))", "event-time attribute"),
    ("SELECT * FROM TABLE(CUMULATE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '2' SECOND, INTERVAL '5' SECOND))",
     "multiple of its step"),
])
def test_window_errors(sql, message):
    with pytest.raises(StreamJoinError) as error:
        _plan(sql)
    assert message in error.value.reason and error.value.line == 1


def test_other_flavours_reject_window_functions():
    with pytest.raises(StreamJoinError) as error:
        run_sql("SELECT * FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND))", T, [],
                dialect="ksqldb")
    assert error.value.rule in ("window-function", "syntax")


K = [source(n, {"key": "STRING", "id": "STRING", "rowtime": "TIMESTAMP(3)"}, timestamp="rowtime") for n in ("T1", "T2")]
#   T1 A@1 A@2 A@3 B@4 A@6 ; T2 A@3 B@7 A@9   (seconds)
K_ROWS = [row(name, s * S, {"key": key, "id": f"{name}-{s}", "rowtime": f"1970-01-01 00:00:{s:02d}.000"})
          for name, s, key in (("T1", 1, "A"), ("T1", 2, "A"), ("T1", 3, "A"), ("T2", 3, "A"), ("T1", 4, "B"),
                               ("T1", 6, "A"), ("T2", 7, "B"), ("T2", 9, "A"))]
INTERVAL = ("t1.key = t2.key AND t1.rowtime BETWEEN t2.rowtime - INTERVAL '5' SECOND AND "
            "t2.rowtime + INTERVAL '6' SECOND")


def test_group_window_over_an_interval_join():
    # Pairs (t1 in [t2 - 5 s, t2 + 6 s]): A@1,2,3 with A@3 -> window [0, 4): 3; A@6 with A@3 and
    # A@9 -> [4, 8): 2; B@4 with B@7 -> [4, 8): 1. The unnamed TUMBLE_END keeps Flink's name EXPR$1.
    sql = (f"SELECT t1.key, TUMBLE_END(t1.rowtime, INTERVAL '4' SECOND), COUNT(t2.key) AS cnt FROM T1 AS t1, "
           f"T2 AS t2 WHERE {INTERVAL} GROUP BY TUMBLE(t1.rowtime, INTERVAL '4' SECOND), t1.key")
    out = [(r["key"], r["EXPR$1"][-6:-4], r["cnt"]) for r in values(run_sql(sql, K, K_ROWS))]
    assert sorted(out) == [("A", "04", 3), ("A", "08", 2), ("B", "08", 1)]


def test_window_function_over_a_view_of_an_interval_join_keeps_its_time_attribute():
    setup = [f"CREATE VIEW pairs AS SELECT t1.key, t1.rowtime FROM T1 AS t1 JOIN T2 AS t2 ON {INTERVAL}"]
    sql = ("SELECT key, window_end, COUNT(*) AS n FROM TABLE(HOP(TABLE pairs, DESCRIPTOR(rowtime), "
           "INTERVAL '4' SECOND, INTERVAL '8' SECOND)) GROUP BY key, window_start, window_end")
    out = [(r["key"], r["window_end"][-6:-4], r["n"]) for r in values(run_sql(sql, K, K_ROWS, setup=setup))]
    # pair times: A 1, 2, 3, 6, 6 and B 4; HOP 8 s every 4 s: windows ending 4, 8, 12
    assert sorted(out) == [("A", "04", 3), ("A", "08", 5), ("A", "12", 2), ("B", "08", 1), ("B", "12", 1)]


def test_an_interval_join_holds_back_the_watermark_for_the_windows_after_it():
    # T1 A@1 ; T2 B@2 ; T1 B@7 (the join's inputs are at 7 and 2: watermark 2) ; T2 A@6 pairs with
    # T1 A@1 now. Were the join's output watermark 2, the 2 s window [0, 2) of that pair would
    # already be closed; it is held back by the interval (6 s), so the pair counts.
    rows = [row(name, s * S, {"key": key, "id": f"{name}-{s}", "rowtime": f"1970-01-01 00:00:{s:02d}.000"})
            for name, s, key in (("T1", 1, "A"), ("T2", 2, "B"), ("T1", 7, "B"), ("T2", 6, "A"))]
    sql = (f"SELECT t1.key, TUMBLE_START(t1.rowtime, INTERVAL '2' SECOND) AS ws, COUNT(*) AS cnt FROM T1 AS t1, "
           f"T2 AS t2 WHERE {INTERVAL} GROUP BY TUMBLE(t1.rowtime, INTERVAL '2' SECOND), t1.key")
    out = [(r["key"], r["ws"][-6:-4], r["cnt"]) for r in values(run_sql(sql, K, rows))]
    assert sorted(out) == [("A", "00", 1), ("B", "06", 1)]  # B: T1 B@7 with T2 B@2


@pytest.mark.parametrize("group, message", [
    ("TUMBLE(t1.id, INTERVAL '4' SECOND)", "not one"),
    ("HOP(t1.rowtime, INTERVAL '4' SECOND)", "one HOP(time, slide, size)"),
    ("TUMBLE(t1.rowtime, 4)", "positive INTERVAL"),
])
def test_group_window_errors(group, message):
    with pytest.raises(StreamJoinError) as error:
        run_sql(f"SELECT COUNT(*) AS n FROM T1 AS t1 GROUP BY {group}", K, [])
    assert error.value.rule == "group-window" and message in error.value.reason


def test_explain_shows_the_windows():
    per_window = ("SELECT name, window_start, window_end, COUNT(*) AS n FROM TABLE(HOP(TABLE {0}, DESCRIPTOR(rowtime),"
                  " INTERVAL '2' SECOND, INTERVAL '4' SECOND, INTERVAL '1' SECOND)) GROUP BY name, window_start, window_end")
    text = explain(_plan(WINDOW_JOIN.format(per_window.format("T1"), "LEFT", per_window.format("T2"))))
    for part in ("WindowTvfJoin LEFT", "window HOP(2s, 4s) offset 1s", "WindowAssign  HOP(2s, 4s) offset 1s on T1.rowtime",
                 "WindowAggregate  group by [T1.name, T1.window_start, T1.window_end]"):
        assert part in text, text
