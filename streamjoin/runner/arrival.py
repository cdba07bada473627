"""Deliver a case's inputs so the engine sees them in the case's arrival order.

Kafka keeps order only within a partition; a task takes records across its input partitions by
smallest head timestamp (Kafka Streams). When that order would differ from the order the case
lists its inputs in (e.g. two records with the same timestamp on different topics, or a
processing-time case), the runner produces the inputs in segments and lets the query process
each segment before producing the next one, just as records arriving later in wall-clock time
would be. Segments are as long as possible: usually a case is one segment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Hashable, Sequence

from streamjoin.operators.ordering import merge_in_timestamp_order


@dataclass(frozen=True)
class Arrival:
    index: int  # position in the case's input list
    task: int  # the partition number the record lands in
    queue: tuple[str, int]  # (topic, partition)
    ts: int


def _task_order(arrivals: Sequence[Arrival]) -> list[int]:
    queues: dict[tuple[str, int], list[Arrival]] = {}
    for a in arrivals:
        queues.setdefault(a.queue, []).append(a)
    ordered = merge_in_timestamp_order([queues[q] for q in sorted(queues)], timestamp=lambda a: a.ts)
    return [a.index for a in ordered]


def _in_arrival_order(segment: Sequence[Arrival]) -> bool:
    by_task: dict[Hashable, list[Arrival]] = {}
    for a in segment:
        by_task.setdefault(a.task, []).append(a)
    return all(_task_order(items) == [a.index for a in items] for items in by_task.values())


def arrival_segments(arrivals: Sequence[Arrival]) -> list[list[Arrival]]:
    """Split `arrivals` (in arrival order) into the fewest consecutive segments within which
    every task's timestamp-merged order equals the arrival order."""
    segments: list[list[Arrival]] = []
    current: list[Arrival] = []
    for a in arrivals:
        if current and not _in_arrival_order(current + [a]):
            segments.append(current)
            current = []
        current.append(a)
    if current:
        segments.append(current)
    return segments
