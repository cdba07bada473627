"""Automatic repartitioning: a 2-partition stream keyed by something else joined with a
6-partition table goes through `<query>-0-repartition` (6 partitions, murmur2 of the join key)
and gives exactly what the co-partitioned run gives. A foreign-key join over 3 + 2 partitions
(every task reads the referenced table whole) gives what the single-partition run gives."""

from __future__ import annotations

import pytest

from streamjoin.runner.cases import Case
from streamjoin.settings import Settings
from streamjoin.runner.planned import plan_case
from streamjoin.runner.run import CaseRunner
from streamjoin.spark.physical import explain_physical
from tests.pure.runtime.test_foreign_key_partitions import fk_case

USERS = [{"source": "users", "ts": 1000 + i, "key": i, "value": {"fullName": f"user-{i}"}} for i in range(1, 13)]
# Clicks keyed by a session id (not the join column); user 13 has no row in users.
CLICKS = [{"source": "clicks", "ts": 2000 + i, "key": f"s-{i}", "value": {"userId": i % 13 + 1, "url": f"/p{i}"}}
          for i in range(40)]
EXPECTED = [{"ts": c["ts"], "key": c["value"]["userId"],
             "value": {"URL": c["value"]["url"], "FULLNAME": f"user-{c['value']['userId']}"}}
            for c in CLICKS if c["value"]["userId"] <= 12]
SQL = "SELECT clicks.url, users.fullName FROM clicks JOIN users ON clicks.userId = users.userId EMIT CHANGES;"


def case(case_id: str, clicks_partitions: int, keyed_by_session: bool) -> Case:
    """The same clicks either keyed by session (2 partitions: the join must repartition them) or
    keyed by userId (6 partitions: already co-partitioned with users)."""
    if keyed_by_session:
        key, columns = ["sessionId"], {"sessionId": "STRING", "userId": "BIGINT", "url": "STRING"}
        clicks = CLICKS
    else:
        key, columns = ["userId"], {"userId": "BIGINT", "url": "STRING"}
        clicks = [dict(c, key=c["value"]["userId"], value={"url": c["value"]["url"]}) for c in CLICKS]
    return Case.from_json({
        "id": case_id, "dialect": "ksqldb", "sql": SQL, "compare": "multiset", "settings": {},
        "sources": [
            {"name": "clicks", "kind": "stream", "topic": "clicks", "partitions": clicks_partitions,
             "key": key, "columns": columns, "timestamp": None},
            {"name": "users", "kind": "table", "topic": "users", "partitions": 6, "key": ["userId"],
             "columns": {"userId": "BIGINT", "fullName": "STRING"}, "timestamp": None}],
        "inputs": USERS + clicks, "expected": EXPECTED})


@pytest.mark.integration
def test_two_partition_stream_joins_six_partition_table_through_a_repartition_topic(spark, kafka_bootstrap):
    runner = CaseRunner(spark, kafka_bootstrap, Settings.from_env())
    try:
        repartitioned = case("repartitioned", 2, keyed_by_session=True)
        copartitioned = case("copartitioned", 6, keyed_by_session=False)
        planned = plan_case(repartitioned, "inspect.")
        assert [q.sink.topic for q in planned.queries] == ["inspect.query_1-0-repartition", "inspect.query_1"]
        assert planned.topic_partitions["inspect.query_1-0-repartition"] == 6
        assert len(plan_case(copartitioned, "inspect2.").queries) == 1  # already co-partitioned
        results = list(runner.run_all([repartitioned, copartitioned]))
    finally:
        runner.close()
    assert [r.line() for r in results] == ["PASS repartitioned", "PASS copartitioned"]


@pytest.mark.integration
def test_foreign_key_join_over_three_and_two_partitions_matches_one_partition(spark, kafka_bootstrap):
    spread, single = fk_case("fk_spread", 3, 2), fk_case("fk_single", 1, 1)
    assert "every task reads all partitions of inspect.customers" in explain_physical(
        plan_case(spread, "inspect.").queries)
    runner = CaseRunner(spark, kafka_bootstrap, Settings.from_env())
    try:
        results = list(runner.run_all([spread, single]))
    finally:
        runner.close()
    assert [r.line() for r in results] == ["PASS fk_spread", "PASS fk_single"]
