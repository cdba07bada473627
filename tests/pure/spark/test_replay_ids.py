"""Replay ids are unique per query and per checkpoint lifetime: a checkpoint keeps its epoch for
good (a replayed batch repeats its ids), a new checkpoint (a reset) mints another, and the
documented dedupe then keeps every record of two writers whose batch numbers coincide."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass

import pytest

from streamjoin.kafka.records import REPLAY_HEADER, ConsumedRecord, dedupe_replayed
from streamjoin.runtime.contract import STATE_FORMAT
from streamjoin.spark.query import CHECKPOINT_NOTES, checkpoint_shuffle_partitions, replay_writer_id


class _Conf:
    def get(self, name: str) -> str:
        return {"spark.sql.shuffle.partitions": "3"}[name]


class _Spark:
    conf = _Conf()


def test_a_checkpoint_keeps_its_epoch_until_it_is_reset(tmp_path):
    checkpoint = tmp_path / "checkpoints" / "q"
    first = replay_writer_id("q", checkpoint)
    assert first.startswith("q@") and len(first) == len("q@") + 12
    assert checkpoint_shuffle_partitions(_Spark(), checkpoint) == 3  # the notes keep the epoch
    assert replay_writer_id("q", checkpoint) == first
    notes = json.loads((checkpoint / CHECKPOINT_NOTES).read_text())
    assert notes == {"replay_epoch": first[2:], "shuffle_partitions": 3, "state_format": STATE_FORMAT}

    shutil.rmtree(checkpoint)  # what a reset does
    assert replay_writer_id("q", checkpoint) != first


def test_a_checkpoint_from_before_epochs_gets_one_and_keeps_its_notes(tmp_path):
    (tmp_path / CHECKPOINT_NOTES).write_text(json.dumps({"shuffle_partitions": 5, "state_format": STATE_FORMAT}))
    writer = replay_writer_id("q", tmp_path)
    assert checkpoint_shuffle_partitions(_Spark(), tmp_path) == 5
    assert replay_writer_id("q", tmp_path) == writer


def record(offset: int, replay_id: str) -> ConsumedRecord:
    return ConsumedRecord("out", 0, offset, None, b"%d" % offset, 0, 0, ((REPLAY_HEADER, replay_id.encode()),))


@dataclass(frozen=True)
class Case:
    name: str
    writers: tuple[str, ...]  # each writes batch 0 of task 0, records 0 and 1, in this order
    kept: int


def writers_of(tmp_path, case: Case) -> list[str]:
    """The writer ids the case's writers get: "same checkpoint" repeats one, "reset" deletes it between."""
    checkpoint = tmp_path / "checkpoints" / "q"
    result = []
    for name in case.writers:
        if name == "reset":
            shutil.rmtree(checkpoint)
            name = "q"
        result.append(replay_writer_id(name, checkpoint if name == "q" else tmp_path / "checkpoints" / name))
    return result


CASES = [
    Case("a replay of one checkpoint's batch is dropped", ("q", "q"), 2),
    Case("two queries writing one topic keep all", ("q", "other"), 4),
    Case("a query reset and run again keeps all", ("q", "reset"), 4),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_dedupe_keeps_what_distinct_writers_wrote(tmp_path, case: Case):
    ids = [f"{writer}:0:0.{seq}" for writer in writers_of(tmp_path, case) for seq in (0, 1)]
    assert len(list(dedupe_replayed(record(n, i) for n, i in enumerate(ids)))) == case.kept
