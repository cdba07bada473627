"""End to end in the conformance case format, through `streamjoin run-cases --local`: a session
window over a stream-table join result, and a second query that reads the session-windowed table
back (the SESSION windowed key written by one query and decoded by the next)."""

from __future__ import annotations

import copy
import json

from streamjoin.cli import main

GAP_60S_GRACE_2M = "WINDOW SESSION (60 SECONDS, GRACE PERIOD 2 MINUTES)"


def _order(ts: int, order_id: str, customer: str, amount: int) -> dict:
    return {"source": "orders", "ts": ts, "key": order_id, "value": {"customer_id": customer, "amount": amount}}


def _out(topic: str, key: str, ts: int, start: int, end: int, value: dict | None) -> dict:
    return {"topic": topic, "ts": ts, "key": key, "value": value, "window": {"start": start, "end": end, "type": "SESSION"}}


# Sessions per region (gap 60 s, grace 2 min), times in ms:
#   o1 c1/EU @1000        EU [1000,1000] 1 order
#   o2 c2/US @2000        US [2000,2000]
#   o3 c3/EU @50000       49 s later: EU [1000,1000] stretches to [1000,50000] (old key deleted)
#   o4 c1/EU @160000      110 s after 50000: a second EU session [160000,160000]
#   o5 c3/EU @105000      55 s after the first, 55 s before the second: both merge into
#                         [1000,160000], 4 orders, total 10+7+1+2 (both old keys deleted)
#   o6 c2/US @400000      a new US session; stream time 400000 closes every earlier session
#   o7 c1/EU @200000      late: its session would end before 400000 - 60 s - 2 min; dropped
# BUSY keeps the sessions with 3 orders or more; a deleted session key is deleted there too.
CASE = {
    "id": "session.over_join",
    "dialect": "ksqldb",
    "sources": [],
    "setup": [
        ("CREATE TABLE customers (id STRING PRIMARY KEY, region STRING) "
         "WITH (kafka_topic='customers', value_format='JSON', partitions=1);"),
        ("CREATE STREAM orders (order_id STRING KEY, customer_id STRING, amount INT) "
         "WITH (kafka_topic='orders', value_format='JSON', partitions=1);"),
    ],
    "sql": ("CREATE TABLE region_sessions AS SELECT c.region AS region, COUNT(*) AS orders, SUM(o.amount) AS total "
            f"FROM orders o JOIN customers c ON o.customer_id = c.id {GAP_60S_GRACE_2M} GROUP BY c.region "
            "EMIT CHANGES;\n"
            "CREATE TABLE busy WITH (kafka_topic='BUSY') AS SELECT region, orders, total FROM region_sessions "
            "WHERE orders >= 3 EMIT CHANGES;"),
    "inputs": [
        {"source": "customers", "ts": 0, "key": "c1", "value": {"region": "EU"}},
        {"source": "customers", "ts": 0, "key": "c2", "value": {"region": "US"}},
        {"source": "customers", "ts": 0, "key": "c3", "value": {"region": "EU"}},
        _order(1000, "o1", "c1", 10), _order(2000, "o2", "c2", 5), _order(50000, "o3", "c3", 7),
        _order(160000, "o4", "c1", 1), _order(105000, "o5", "c3", 2), _order(400000, "o6", "c2", 9),
        _order(200000, "o7", "c1", 4),
    ],
    "expected": [
        _out("REGION_SESSIONS", "EU", 1000, 1000, 1000, {"ORDERS": 1, "TOTAL": 10}),
        _out("REGION_SESSIONS", "US", 2000, 2000, 2000, {"ORDERS": 1, "TOTAL": 5}),
        _out("REGION_SESSIONS", "EU", 1000, 1000, 1000, None),
        _out("REGION_SESSIONS", "EU", 50000, 1000, 50000, {"ORDERS": 2, "TOTAL": 17}),
        _out("REGION_SESSIONS", "EU", 160000, 160000, 160000, {"ORDERS": 1, "TOTAL": 1}),
        _out("REGION_SESSIONS", "EU", 50000, 1000, 50000, None),
        _out("REGION_SESSIONS", "EU", 160000, 160000, 160000, None),
        _out("REGION_SESSIONS", "EU", 160000, 1000, 160000, {"ORDERS": 4, "TOTAL": 20}),
        _out("REGION_SESSIONS", "US", 400000, 400000, 400000, {"ORDERS": 1, "TOTAL": 9}),
        _out("BUSY", "EU", 1000, 1000, 1000, None),
        _out("BUSY", "EU", 50000, 1000, 50000, None),
        _out("BUSY", "EU", 160000, 160000, 160000, None),
        _out("BUSY", "EU", 160000, 1000, 160000, {"ORDERS": 4, "TOTAL": 20}),
    ],
    "compare": "ordered",
}


def test_session_window_case_runs_locally(tmp_path, capsys):
    # the same case expecting TIME windowed keys: the bytes differ, so it must fail
    as_time = copy.deepcopy(CASE)
    as_time["id"] = "session.as_time_window"
    for record in as_time["expected"]:
        record["window"]["type"] = "TIME"
    path = tmp_path / "session_cases.json"
    path.write_text(json.dumps([CASE, as_time]))
    assert main(["run-cases", str(path), "--local"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "PASS session.over_join"
    assert lines[1].startswith("FAIL session.as_time_window: ") and "SESSION" in lines[1]
    assert lines[-1] == "1 passed, 1 failed"
