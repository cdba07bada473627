"""Task grouping keys: our murmur3 is Spark's `hash()` of an INT, and each task's key lands on
shuffle partition task mod N (tasks 0 and 1 as plain numbers both land on partition 1 of 2)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.spark.task_keys import STRIDE, shuffle_partition, spark_hash, task_key, task_of


@dataclass(frozen=True)
class Case:
    value: int
    expected: int  # what Spark 4.2's `SELECT hash(CAST(value AS INT))` printed


CASES = [Case(0, 933211791), Case(1, -559580957), Case(2, 1765031574), Case(3, -1823081949),
         Case(7, 1079293707), Case(65536, 1017081869), Case(65537, 2060199986), Case(131072, 1106732521),
         Case(-5, 1369497261), Case(2**31 - 1, 133916647), Case(-(2**31), 723455942),
         Case(123456789, -598405280)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: str(c.value))
def test_hash_is_sparks(case: Case) -> None:
    assert spark_hash(case.value) == case.expected


def test_task_numbers_alone_share_a_partition() -> None:
    # Why keys are spread at all: with 2 shuffle partitions tasks 0 and 1 would run on one core.
    assert shuffle_partition(0, 2) == shuffle_partition(1, 2) == 1


@pytest.mark.parametrize("partitions", [1, 2, 3, 4, 8, 200])
def test_each_task_gets_the_partition_of_its_number(partitions: int) -> None:
    for task in range(16):
        key = task_key(task, partitions)
        assert shuffle_partition(key, partitions) == task % partitions
        assert task_of(key) == task
        assert key % STRIDE == task and key < 2**31


def test_timeline_of_the_docstring() -> None:
    # 2 partitions: task 0 skips five keys hashing to partition 1; task 1 keeps its number.
    assert [shuffle_partition(k * STRIDE, 2) for k in range(6)] == [1, 1, 1, 1, 1, 0]
    assert (task_key(0, 2), task_key(1, 2)) == (5 * STRIDE, 1)
