"""The run loop of the primary-key table-table join (`operators.table_table_runs`) against
`TableTableJoin.process` record by record.

Inputs are randomized: both tables interleaved, upserts and tombstones (of present and absent
rows) of a few keys and NULL keys, times moving forward with noise, repeated and now and then
far back; cut into runs of random lengths, as a task's runs come."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from streamjoin.operators.base import Change, JoinType, Record, RowKind, Side
from streamjoin.operators.table_table import TableTableJoin, TableTableJoinConfig
from streamjoin.operators.table_table_runs import TableTableRun, takes_runs

L, R = Side.LEFT, Side.RIGHT
INSERT, UPDATE, DELETE = RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE


def records(rng: random.Random, count: int) -> list[Record]:
    out, now = [], 1_000
    for n in range(count):
        roll = rng.random()
        now += rng.randrange(0, 8)
        ts = now - rng.randrange(50, 300) if roll > 0.95 else now if roll > 0.85 else now + rng.randrange(-20, 20)
        key = None if rng.random() < 0.05 else (f"k{rng.randrange(6)}",)
        value = None if rng.random() < 0.2 else {"t": {"v": n}}
        out.append(Record(rng.choice(tuple(Side)), key, value, ts))
    return out


def state(join: TableTableJoin) -> tuple:
    return [sorted(table.items()) for table in join.tables], join.metrics.counts


def in_runs(join: TableTableJoin, inputs: list[Record], rng: random.Random) -> list[tuple[int, Change]]:
    got, start = [], 0
    while start < len(inputs):
        end = start + rng.randrange(1, 200)
        got += TableTableRun(join)([(index, record.side, record.key, record.value, record.ts, None)
                                    for index, record in enumerate(inputs[start:end], start)])
        start = end
    return got


@pytest.mark.parametrize("join_type", [JoinType.INNER, JoinType.LEFT, JoinType.RIGHT, JoinType.FULL], ids=str)
@pytest.mark.parametrize("seed", range(5))
def test_the_run_loop_gives_what_process_gives(join_type: JoinType, seed: int):
    rng = random.Random(seed)
    inputs = records(rng, 1_500)
    reference, fast = TableTableJoin(TableTableJoinConfig(join_type)), TableTableJoin(TableTableJoinConfig(join_type))
    assert takes_runs(fast)
    expected = [(index, change) for index, record in enumerate(inputs) for change in reference.process(record)]
    assert in_runs(fast, inputs, rng) == expected
    assert state(fast) == state(reference)
    kinds = {change.kind for _, change in expected}
    assert kinds == {INSERT, UPDATE, DELETE} and reference.metrics["null_key"], (kinds, reference.metrics.counts)


@dataclass(frozen=True)
class Case:
    name: str
    join_type: JoinType
    inputs: list[tuple[Side, str | None, int]]  # (side, value or None for a tombstone, ts), one key
    expected: list[tuple[int, RowKind, str | None, str | None, int]]  # (input index, kind, left, right, ts)


TIMELINES = [
    # The class docstring's timeline.
    Case("LEFT JOIN", JoinType.LEFT,
         [(L, "A", 5), (R, "a", 3), (R, None, 9), (L, None, 7), (L, None, 8)],
         [(0, INSERT, "A", None, 5), (1, UPDATE, "A", "a", 5), (2, UPDATE, "A", None, 9), (3, DELETE, None, None, 7)]),
    Case("INNER JOIN", JoinType.INNER,
         [(L, "A", 1), (R, "a", 2), (L, "B", 3), (R, None, 4), (R, "b", 5), (L, None, 6)],
         [(1, INSERT, "A", "a", 2), (2, UPDATE, "B", "a", 3), (3, DELETE, None, None, 4), (4, INSERT, "B", "b", 5),
          (5, DELETE, None, None, 6)]),
    Case("FULL OUTER JOIN", JoinType.FULL,
         [(R, "a", 4), (L, "A", 2), (R, None, 1), (L, None, 3)],
         [(0, INSERT, None, "a", 4), (1, UPDATE, "A", "a", 4), (2, UPDATE, "A", None, 2), (3, DELETE, None, None, 3)]),
]


@pytest.mark.parametrize("case", TIMELINES, ids=lambda c: c.name)
def test_timelines(case: Case):
    join = TableTableJoin(TableTableJoinConfig(case.join_type))
    run = [(index, side, ("k",), None if value is None else {"t": value}, ts, None)
           for index, (side, value, ts) in enumerate(case.inputs)]
    got = [(index, change.kind, change.left and change.left["t"], change.right and change.right["t"], change.ts)
           for index, change in TableTableRun(join)(run)]
    assert got == case.expected


def test_a_residual_condition_or_retractions_keep_the_record_path():
    assert not takes_runs(TableTableJoin(TableTableJoinConfig(residual=lambda left, right: True)))
    assert not takes_runs(TableTableJoin(TableTableJoinConfig(emit_retractions=True)))
