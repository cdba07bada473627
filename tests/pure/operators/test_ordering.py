"""Kafka Streams' record selection across a task's input partitions."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.operators.base import Record, Side
from streamjoin.operators.ordering import merge_in_timestamp_order


@dataclass
class Case:
    name: str
    queues: list[list[tuple[str, int]]]  # per partition, in offset order: (name, ts)
    expected: list[str]


CASES = [
    # Heads 5 | 2 -> b2 ; 5 | 9 -> a5 ; then a1 (behind a5 in its partition), a7, b9.
    Case("offset_order_within_a_partition",
         [[("a5", 5), ("a1", 1), ("a7", 7)], [("b2", 2), ("b9", 9)]],
         ["b2", "a5", "a1", "a7", "b9"]),
    # Equal timestamps: the lower input index first, each partition in offset order.
    Case("ties_go_to_lowest_input",
         [[("a3", 3), ("a3'", 3)], [("b3", 3)], [("c1", 1)]],
         ["c1", "a3", "a3'", "b3"]),
    Case("empty_partitions", [[], [("b1", 1)], []], ["b1"]),
    Case("no_partitions", [], []),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_merge_in_timestamp_order(case: Case) -> None:
    merged = merge_in_timestamp_order(case.queues, timestamp=lambda item: item[1])
    assert [name for name, _ in merged] == case.expected


def test_records_are_ordered_by_their_ts_by_default() -> None:
    left = [Record(Side.LEFT, "k", {"v": 1}, 20), Record(Side.LEFT, "k", {"v": 2}, 30)]
    right = [Record(Side.RIGHT, "k", {"v": 3}, 25)]
    assert [r.value["v"] for r in merge_in_timestamp_order([left, right])] == [1, 3, 2]
