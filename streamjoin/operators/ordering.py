"""Kafka Streams' record selection for one task: which buffered record is processed next.

A task reads several input partitions (one per co-partitioned input topic). Kafka Streams keeps a
queue per partition, in offset order, and always processes the head record with the smallest
timestamp; it never reorders records inside one partition. Ties go to the lowest input index
(the order the queues are given in); within one queue offset order decides.

Timeline (queue 0 = left partition, queue 1 = right partition):

    queue 0: L@5  L@1  L@7        heads 5 | 2 -> R@2   (L@1 waits behind L@5: offset order)
    queue 1: R@2  R@9             heads 5 | 9 -> L@5, then L@1 (smallest head now), L@7, R@9
    result:  R@2  L@5  L@1  L@7  R@9

The Spark adapter orders a micro-batch's records this way; the conformance runner uses it to
decide the processing order of a case's inputs.
"""

from __future__ import annotations

import heapq
from operator import attrgetter
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

T = TypeVar("T")


def merge_in_timestamp_order(
    queues: Sequence[Iterable[T]], timestamp: Callable[[T], int] = attrgetter("ts")
) -> Iterator[T]:
    """Yield every item of `queues`, repeatedly taking the queue head with the smallest
    `timestamp(item)`; ties go to the queue with the lowest index."""
    iterators = [iter(queue) for queue in queues]
    # Heap entries (ts, queue index, item), one per non-empty queue: the index both breaks ties as
    # Kafka Streams does and keeps items themselves from ever being compared.
    heads: list[tuple[int, int, T]] = []
    for index, iterator in enumerate(iterators):
        for item in iterator:
            heads.append((timestamp(item), index, item))
            break
    heapq.heapify(heads)
    while len(heads) > 1:
        _, index, item = heads[0]
        yield item
        for following in iterators[index]:  # the queue's next head replaces it
            heapq.heapreplace(heads, (timestamp(following), index, following))
            break
        else:
            heapq.heappop(heads)
    if heads:  # one queue left: the rest of it as it is
        _, index, item = heads[0]
        yield item
        yield from iterators[index]
