"""Tasks spread over Spark's shuffle partitions: the grouping keys `TaskRouting` gives put task
t on partition t mod N in Spark itself, and a checkpoint keeps the partition count it started
with (one from before the spread keeps plain task numbers, so its state keys still match)."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from streamjoin.spark.query import TASK_KEYS_MARKER, TaskRouting, checkpoint_shuffle_partitions
from streamjoin.spark.task_keys import task_of


def placement(spark, routing: TaskRouting, partitions: int, topics: list[tuple[str, int]]) -> dict[int, set[int]]:
    """task -> the shuffle partitions Spark hash-partitions its rows to (as groupBy("task") does)."""
    rows = spark.createDataFrame(topics, "topic string, partition int")
    keyed = routing.assign(rows, partitions).repartition(partitions, "task")
    found: dict[int, set[int]] = {}
    for row in keyed.select("task", F.spark_partition_id().alias("p")).collect():
        found.setdefault(task_of(row.task), set()).add(row.p)
    return found


@pytest.mark.integration
@pytest.mark.parametrize("partitions", [2, 3, 4])
def test_each_task_on_its_own_shuffle_partition(spark, partitions: int) -> None:
    routing = TaskRouting(tasks=4)
    rows = [(topic, p) for topic in ("clicks", "users") for p in range(4)]
    assert placement(spark, routing, partitions, rows) == {t: {t % partitions} for t in range(4)}


@pytest.mark.integration
def test_broadcast_rows_reach_every_task_on_its_partition(spark) -> None:
    routing = TaskRouting(frozenset({"customers"}), tasks=2)
    assert placement(spark, routing, 2, [("orders", 0), ("orders", 1), ("customers", 0)]) == {0: {0}, 1: {1}}


@pytest.mark.integration
def test_a_partition_added_later_keeps_its_number_as_key(spark) -> None:
    rows = spark.createDataFrame([("t", 0), ("t", 5)], "topic string, partition int")
    keys = {r.partition: r.task for r in TaskRouting(tasks=1).assign(rows, 2).collect()}
    assert keys[5] == 5 and task_of(keys[0]) == 0 and keys[0] != 0


@pytest.mark.integration
def test_checkpoint_keeps_its_partition_count(spark, tmp_path) -> None:
    fresh = tmp_path / "fresh"
    assert checkpoint_shuffle_partitions(spark, fresh) == int(spark.conf.get("spark.sql.shuffle.partitions"))
    assert (fresh / TASK_KEYS_MARKER).exists()
    (fresh / TASK_KEYS_MARKER).write_text('{"shuffle_partitions": 7}')  # as if started under another conf
    assert checkpoint_shuffle_partitions(spark, fresh) == 7
    legacy = tmp_path / "legacy"
    (legacy / "offsets").mkdir(parents=True)
    (legacy / "offsets" / "0").write_text("v1")  # Spark wrote it; no marker: state keyed by task numbers
    assert checkpoint_shuffle_partitions(spark, legacy) is None
    assert not (legacy / TASK_KEYS_MARKER).exists()
