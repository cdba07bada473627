"""A checkpointed offset outside the log [begin, end] is data loss: fail naming topic, partition,
offset and log range, or start over at the log's beginning or end, as the policy says."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.kafka.offsets import DataLossError, TopicPartition, recover

A0, A1 = TopicPartition("a", 0), TopicPartition("a", 1)


@dataclass(frozen=True)
class Case:
    name: str
    committed: dict
    begins: dict
    ends: dict
    policy: str
    expected: dict | str  # offsets to read from, or a fragment of the DataLossError message


CASES = [
    Case("inside the log", {A0: 5}, {A0: 0}, {A0: 10}, "fail", {A0: 5}),
    Case("at the end: nothing new, no loss", {A0: 10}, {A0: 0}, {A0: 10}, "fail", {A0: 10}),
    # the broker restarted empty (or the topic was recreated) and holds 50 new records
    Case("past the end fails", {A0: 1000}, {A0: 0}, {A0: 50}, "fail",
         "topic 'a' partition 0: the checkpoint's next offset 1000 is past the log end (the log holds offsets 0..50)"),
    Case("past an empty log's end fails", {A0: 1000}, {A0: 0}, {A0: 0}, "fail",
         "topic 'a' partition 0: the checkpoint's next offset 1000 is past the log end (the log is empty, its "
         "next offset 0)"),
    Case("past the end, earliest", {A0: 1000, A1: 3}, {A0: 0, A1: 0}, {A0: 50, A1: 9}, "earliest", {A0: 0, A1: 3}),
    Case("past the end, latest", {A0: 1000}, {A0: 0}, {A0: 50}, "latest", {A0: 50}),
    # retention deleted records 0..19 before they were read
    Case("before the start fails", {A0: 7}, {A0: 20}, {A0: 30}, "fail", "offset 7 is before the log start"),
    Case("before the start, earliest", {A0: 7}, {A0: 20}, {A0: 30}, "earliest", {A0: 20}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_recover(case):
    if isinstance(case.expected, str):
        with pytest.raises(DataLossError, match="Nothing was read") as raised:
            recover(case.committed, case.begins, case.ends, case.policy)
        assert case.expected in str(raised.value)
    else:
        assert recover(case.committed, case.begins, case.ends, case.policy) == case.expected
