"""The identity of the data a checkpoint read: a topic whose id (or whose cluster) changed under a
checkpoint that read it is refused naming topic and partition, or restarted at the new log's
beginning or end by moving the offsets Spark starts its next batch from; then the new identity is
noted. A topic the checkpoint never read, or a first run, is no change."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from streamjoin.app import identity
from streamjoin.kafka.offsets import DataLossError, TopicPartition
from streamjoin.spark.query import CHECKPOINT_NOTES

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
READ = {"cluster": "c1", "topics": {"a": "idA", "b": "idB"}}


def spark_checkpoint(path: Path, batches: list[dict], committed: int, noted: dict | None) -> Path:
    """A checkpoint as Spark leaves it: offsets/<n> (version, metadata, source offsets), commits/<n>."""
    (path / "offsets").mkdir(parents=True)
    (path / "commits").mkdir()
    for n, offsets in enumerate(batches):
        (path / "offsets" / str(n)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{json.dumps(offsets)}')
        (path / "offsets" / f".{n}.crc").write_bytes(b"crc")
        if n < committed:
            (path / "commits" / str(n)).write_text("v1\n{}")
    if noted is not None:
        (path / CHECKPOINT_NOTES).write_text(json.dumps({"replay_epoch": "e", identity.NOTE: noted}))
    return path


def source_offsets(path: Path, batch: int) -> dict:
    return json.loads((path / "offsets" / str(batch)).read_text().splitlines()[-1])


@dataclass(frozen=True)
class Case:
    name: str
    now: dict
    policy: str
    expected: str | list  # a DataLossError fragment, or the source offsets of each offset file after


BATCHES = [{"a": {"0": 40, "1": 45}, "b": {"0": 7}}, {"a": {"0": 100, "1": 90}, "b": {"0": 9}}]
CASES = [
    Case("same data", READ, "fail", BATCHES),
    Case("a recreated: refused", {**READ, "topics": {"a": "idA2", "b": "idB"}}, "fail",
         "topic 'a' partition 0: the topic is not the one the checkpoint read (it read topic id idA, the broker "
         "now has topic id idA2"),
    Case("another cluster: every topic", {"cluster": "c2", "topics": {"a": "idA", "b": "idB"}}, "fail",
         "topic 'b' partition 0: the topic is not the one the checkpoint read (it read cluster c1"),
    Case("a recreated: from its beginning", {**READ, "topics": {"a": "idA2", "b": "idB"}}, "earliest",
         [BATCHES[0], {"a": {"0": 0, "1": 5}, "b": {"0": 9}}]),
    Case("a recreated: from its end", {**READ, "topics": {"a": "idA2", "b": "idB"}}, "latest",
         [BATCHES[0], {"a": {"0": 100, "1": 20}, "b": {"0": 9}}]),
]
BEGINS, ENDS = {A0: 0, A1: 5, B0: 0}, {A0: 100, A1: 20, B0: 9}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_changed_topic_is_refused_or_restarted(tmp_path, case: Case):
    checkpoint = spark_checkpoint(tmp_path / "ck", BATCHES, committed=2, noted=READ)
    if isinstance(case.expected, str):
        with pytest.raises(DataLossError, match=case.expected.replace("(", r"\(")):
            identity.check(checkpoint, case.now, case.policy, BEGINS, ENDS)
        return
    identity.check(checkpoint, case.now, case.policy, BEGINS, ENDS)
    assert [source_offsets(checkpoint, n) for n in range(2)] == case.expected
    notes = json.loads((checkpoint / CHECKPOINT_NOTES).read_text())
    assert notes == {"replay_epoch": "e", identity.NOTE: case.now}
    moved = case.expected != BATCHES
    assert (checkpoint / "offsets" / ".1.crc").exists() is not moved


def test_an_uncommitted_last_batch_restarts_from_the_batch_before_too(tmp_path):
    checkpoint = spark_checkpoint(tmp_path / "ck", BATCHES, committed=1, noted=READ)
    identity.check(checkpoint, {**READ, "topics": {"a": "idA2", "b": "idB"}}, "earliest", BEGINS, ENDS)
    assert [source_offsets(checkpoint, n)["a"] for n in range(2)] == [{"0": 0, "1": 5}] * 2


@pytest.mark.parametrize("noted", [None, {"cluster": None, "topics": {}}], ids=["first run", "no ids before"])
def test_nothing_to_compare_is_no_change_and_notes_what_is_read_now(tmp_path, noted):
    checkpoint = spark_checkpoint(tmp_path / "ck", BATCHES, committed=2, noted=noted)
    identity.check(checkpoint, READ, "fail", BEGINS, ENDS)
    assert json.loads((checkpoint / CHECKPOINT_NOTES).read_text())[identity.NOTE] == READ
