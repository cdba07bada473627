"""The exactly-once producer's bookkeeping, without a broker: one transactional id per (query,
step, task), whatever the checkpoint epoch (so a new incarnation fences the old); one marker topic
per step; and when a task's last committed marker says a batch is done: only a marker of the same
writer (query@epoch) for this batch or a later one, so a new checkpoint's batch 0 is never
mistaken for an old one."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.kafka.transactions import OutputGuarantee, TaskIdentity, guarantee_notice, output_guarantee

TASK = TaskIdentity(query="Q", step="OUT", task=3, writer_id="Q@e1")


def test_ids_and_topics():
    assert TASK.transactional_id == "streamjoin.Q.OUT.3"
    assert TaskIdentity("Q", "OUT", 3, "Q@e2").transactional_id == TASK.transactional_id, "epochs fence each other"
    assert TASK.marker_topic == "streamjoin-commits.Q.OUT" and TASK.marker_key == b"Q/OUT/3"


@dataclass
class Case:
    marker: bytes | None
    batch: int
    committed: int | None


CASES = {
    "no marker yet": Case(None, 0, None),
    "this batch, committed": Case(TASK.marker(7, 12), 7, 12),
    "the batch before": Case(TASK.marker(6, 12), 7, None),
    "a later batch": Case(TASK.marker(8, 5), 7, 0),
    "another epoch's batch": Case(TaskIdentity("Q", "OUT", 3, "Q@e0").marker(9, 4), 7, None),
}


@pytest.mark.parametrize("name", CASES)
def test_a_batch_is_committed_only_by_its_own_writers_marker(name):
    case = CASES[name]
    assert TASK.committed(case.marker, case.batch) == case.committed


@pytest.mark.parametrize("tansu, guarantee", [
    (True, OutputGuarantee.AT_LEAST_ONCE),
    (False, OutputGuarantee.EXACTLY_ONCE),
], ids=["tansu", "other brokers"])
def test_the_guarantee_per_broker_and_the_line_a_run_says(tansu, guarantee):
    assert output_guarantee(tansu) is guarantee
    notice = guarantee_notice(guarantee, "Q")
    assert "\n" not in notice and notice.startswith("Q: Kafka output is " + guarantee.value)
    assert ("read_committed" in notice) == (guarantee is OutputGuarantee.EXACTLY_ONCE)
    assert ("streamjoin.id" in notice) == (guarantee is OutputGuarantee.AT_LEAST_ONCE)
