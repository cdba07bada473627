"""Tasks spread over Spark's shuffle partitions: the grouping keys `TaskRouting` gives put task
t on partition t mod N in Spark itself, and a checkpoint keeps the partition count it started
with; a checkpoint of another state layout is refused before any batch runs."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from streamjoin.runtime.contract import STATE_FORMAT
from streamjoin.spark.paged_state import CheckpointIncompatible
from streamjoin.spark.query import CHECKPOINT_NOTES, TaskRouting, checkpoint_shuffle_partitions
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
    notes = fresh / CHECKPOINT_NOTES
    notes.write_text(f'{{"shuffle_partitions": 7, "state_format": {STATE_FORMAT}}}')  # started under another conf
    assert checkpoint_shuffle_partitions(spark, fresh) == 7


@pytest.mark.integration
@pytest.mark.parametrize("notes, found", [
    ({}, "2 or older"),  # written before any notes existed
    ({"streamjoin-task-keys.json": '{"shuffle_partitions": 2}'}, "2 or older"),  # the note of format 2
    ({CHECKPOINT_NOTES: '{"shuffle_partitions": 2, "state_format": 99}'}, "99"),
])
def test_a_checkpoint_of_another_state_format_is_refused_before_any_batch(spark, tmp_path, notes, found) -> None:
    checkpoint = tmp_path / "old"
    (checkpoint / "offsets").mkdir(parents=True)
    (checkpoint / "offsets" / "0").write_text("v1")  # Spark has run a batch on it
    for name, text in notes.items():
        (checkpoint / name).write_text(text)
    with pytest.raises(CheckpointIncompatible, match=f"checkpoint {checkpoint} holds task state of format {found}; "
                                                     ".* Reset the query and backfill"):
        checkpoint_shuffle_partitions(spark, checkpoint)
