"""The run loops of ksqlDB's INNER stream-stream join and Flink's interval join
(`operators.stream_stream_runs`) against `StreamStreamJoin.process` and `IntervalJoin.process`
record by record, and the engine's window stores (`store_retention`) against a model of what
each side's store keeps.

Inputs are randomized: both sides interleaved, a few keys and NULL keys, times moving forward
with noise, repeated, now and then far back (late) or far ahead (so stores forget)."""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from streamjoin.operators.base import END_OF_TIME, JoinType, Record, Side
from streamjoin.operators.interval import IntervalJoin, IntervalJoinConfig
from streamjoin.operators.stream_stream import StreamStreamJoin, StreamStreamJoinConfig
from streamjoin.operators.stream_stream_runs import (StreamStreamInnerRun, StreamStreamIntervalRun,
                                                     takes_interval_runs, takes_runs)


@dataclass(frozen=True)
class Case:
    name: str
    config: StreamStreamJoinConfig


CASES = [
    # JOIN WITHIN 100 MILLISECONDS GRACE PERIOD 10 MILLISECONDS: retention 210 ms
    Case("within 100 ms, grace 10 ms", StreamStreamJoinConfig(100, 100, grace=10, store_retention=True)),
    Case("within (50 ms, 200 ms), grace 0", StreamStreamJoinConfig(50, 200, grace=0, store_retention=True)),
    # no GRACE PERIOD: Kafka Streams' legacy day, so nothing is ever late or forgotten here
    Case("within 30 ms, legacy grace", StreamStreamJoinConfig(30, 30, store_retention=True)),
]


def records(rng: random.Random, count: int) -> list[Record]:
    out, now = [], 1_000
    for n in range(count):
        roll = rng.random()
        now += 500 if roll < 0.02 else rng.randrange(0, 8)
        ts = now - rng.randrange(250, 600) if roll > 0.95 else now if roll > 0.9 else now + rng.randrange(-40, 40)
        key = None if rng.random() < 0.05 else (f"k{rng.randrange(6)}",)
        out.append(Record(rng.choice(tuple(Side)), key, {"v": n}, ts))
    return out


def state(join: StreamStreamJoin) -> tuple:
    stores = [sorted(store.items()) for store in join.stores]
    return (stores, join.expiring, join.timers, join.next_id, join.time.now, join.store_times, join.metrics.counts)


def in_runs(inputs: list[Record], reference, fast, loop, rng: random.Random) -> list:
    """The changes `reference.process` gives record by record, once `loop(fast)` gave the same
    over runs of random lengths (as a task's runs come)."""
    expected = [(index, change) for index, record in enumerate(inputs) for change in reference.process(record)]
    got, start = [], 0
    while start < len(inputs):
        end = start + rng.randrange(1, 200)
        run = [(index, record.side, record.key, record.value, record.ts, None)
               for index, record in enumerate(inputs[start:end], start)]
        got += loop(fast)(run)
        start = end
    assert got == expected
    return expected


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", range(6))
def test_the_run_loop_gives_what_process_gives(case: Case, seed: int):
    rng = random.Random(seed)
    reference, fast = StreamStreamJoin(case.config), StreamStreamJoin(case.config)
    assert takes_runs(fast)
    expected = in_runs(records(rng, 1_500), reference, fast, StreamStreamInnerRun, rng)
    assert state(fast) == state(reference)
    assert len(expected) > 300 and reference.metrics["null_key"], reference.metrics.counts
    assert reference.metrics["late"] or case.config.grace is None


# Flink's `l.t BETWEEN r.t + lower AND r.t + upper` (ms) with the sources' watermark delay.
INTERVALS = [IntervalJoinConfig(-40, 0), IntervalJoinConfig(-30, 20, watermark_delay=15),
             IntervalJoinConfig(10, 60, watermark_delay=5), IntervalJoinConfig(30, 10)]  # the last one empty


def interval_state(join: IntervalJoin) -> tuple:
    stores = [sorted(store.items()) for store in join.stores]
    return (stores, sorted(join.timers), join.next_id, join.max_ts, join.floor, join.metrics.counts)


@pytest.mark.parametrize("join_type", list(JoinType)[:4])
@pytest.mark.parametrize("interval", INTERVALS, ids=repr)
@pytest.mark.parametrize("seed", range(4))
def test_the_interval_run_loop_gives_what_process_gives(join_type: JoinType, interval: IntervalJoinConfig, seed: int):
    rng = random.Random(seed)
    config = IntervalJoinConfig(interval.lower, interval.upper, join_type, interval.watermark_delay)
    reference, fast = IntervalJoin(config), IntervalJoin(config)
    assert takes_interval_runs(fast)
    expected = in_runs(records(rng, 1_500), reference, fast, StreamStreamIntervalRun, rng)
    assert interval_state(fast) == interval_state(reference)
    assert reference.metrics["null_key"] and reference.metrics["late"], reference.metrics.counts
    assert len(expected) > 300 or (config.lower > config.upper and join_type is JoinType.INNER)
    padded = sum(1 for _, change in expected if change.left is None or change.right is None)
    assert bool(padded) == (join_type is not JoinType.INNER), padded
    assert reference.advance_to(END_OF_TIME) == fast.advance_to(END_OF_TIME)  # the last windows close alike
    assert interval_state(fast) == interval_state(reference)


def test_an_interval_join_with_a_residual_condition_keeps_the_record_path():
    residual = IntervalJoinConfig(-40, 0, residual=lambda left, right: left["v"] % 3 != 0)
    assert not takes_interval_runs(IntervalJoin(residual))


def stored(join: StreamStreamJoin, side: Side) -> list[tuple]:
    return sorted((key, entry[0], entry[1]) for key, entries in join.stores[side].items() for entry in entries)


@pytest.mark.parametrize("join_type", [JoinType.INNER, JoinType.LEFT, JoinType.RIGHT, JoinType.FULL])
@pytest.mark.parametrize("case", CASES[:2], ids=lambda c: c.name)
@pytest.mark.parametrize("seed", range(3))
def test_a_window_store_keeps_exactly_what_its_retention_holds(join_type: JoinType, case: Case, seed: int):
    """After each record, its side's store holds every record of that side it kept and no record
    behind the side's retention (the other side forgets on its own records); each stored key's
    earliest entry is in its side's expiring heap, which holds far fewer items than records."""
    join = StreamStreamJoin(StreamStreamJoinConfig(case.config.before, case.config.after, grace=case.config.grace,
                                                   join_type=join_type, store_retention=True))
    model: tuple[list, list] = ([], [])
    inputs = records(random.Random(seed), 2_000)
    for record in inputs:
        entry_id = join.next_id
        join.process(record)
        side = record.side
        if join.next_id > entry_id:
            model[side].append((record.key, record.ts, entry_id))
        if record.key is not None:
            oldest = join.retained_from(side)
            model[side][:] = [item for item in model[side] if item[1] >= oldest]
        assert stored(join, side) == sorted(model[side])
        for store, heap in zip(join.stores, join.expiring):
            items = set(heap)
            for key, entries in store.items():
                earliest = min(entries, key=lambda entry: entry[0])
                assert (earliest[0], earliest[1], key) in items
    assert join.metrics["late"] and sum(map(len, join.expiring)) < len(inputs) / 4
