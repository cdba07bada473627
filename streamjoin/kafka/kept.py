"""A process's at-least-once producers, kept between writes (a Python worker's batches) and closed
once idle, as Spark's own Kafka producer cache does (`spark.kafka.producer.cache.timeout`).

A new producer connects and fetches the topics' metadata again, ~5 ms a write here and more inside
a loaded task, so a worker keeps one per client config and record limit. One per thread, since a
write reads its own delivery failures; none shared with a forked process, which has none of its
parent's client threads. A kept producer whose query stopped, or whose brokers went away, would
otherwise hold its connections (and log every reconnect) for the worker's whole life: one unused
for IDLE_S is dropped by a sweeper thread, and the next write makes a new one.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from typing import Callable, Hashable

IDLE_S = 60.0  # shorter than Spark's 10 minutes: a new producer costs ~5 ms, an idle one its connections


@dataclass
class _Kept:
    value: tuple
    pid: int
    last_used: float
    in_use: bool = False


class KeptProducers:
    """Kept (producer, delivery failures) pairs by (key, process, thread). `take` hands one out
    (making it with `make` when none is kept), `release` marks it used now, `drop` forgets it (a
    failed write's producer may still hold that write's records). `sweep` drops what is idle for
    `idle_s` and not in use; a daemon thread per process runs it every half `idle_s`.

    Timeline (idle_s 60): a write at t=0 takes and releases a producer; one at t=40 gets it back;
    the query stops; the sweep at t=90 keeps it (idle 50 s), the one at t=120 drops it (80 s)."""

    def __init__(self, idle_s: float = IDLE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.idle_s, self._clock = idle_s, clock
        self._kept: dict[tuple, _Kept] = {}
        self._lock = threading.Lock()
        self._sweeper_pid: int | None = None

    def take(self, key: Hashable, make: Callable[[], tuple]) -> tuple:
        full = (key, os.getpid(), threading.get_ident())  # only this thread makes or takes this entry
        with self._lock:
            kept = self._kept.get(full)
            if kept is not None:
                kept.in_use = True
                return kept.value
        kept = _Kept(make(), os.getpid(), self._clock(), in_use=True)  # a connection: not under the lock
        with self._lock:
            self._kept[full] = kept
            self._start_sweeper()
        return kept.value

    def release(self, key: Hashable) -> None:
        with self._lock:
            kept = self._kept.get((key, os.getpid(), threading.get_ident()))
            if kept is not None:
                kept.in_use, kept.last_used = False, self._clock()

    def drop(self, key: Hashable) -> None:
        with self._lock:
            self._kept.pop((key, os.getpid(), threading.get_ident()), None)

    def sweep(self) -> int:
        """Drops this process's producers idle for `idle_s`; how many. A parent's, inherited by a
        fork, are never touched here: closing one would wait on threads this process lacks."""
        now, pid = self._clock(), os.getpid()
        with self._lock:
            idle = [full for full, kept in self._kept.items()
                    if kept.pid == pid and not kept.in_use and now - kept.last_used >= self.idle_s]
            dropped = [self._kept.pop(full) for full in idle]
        del dropped  # closed here, outside the lock: a producer's close joins its threads
        return len(idle)

    def __len__(self) -> int:
        return len(self._kept)

    def _start_sweeper(self) -> None:
        if self._sweeper_pid == os.getpid():
            return
        self._sweeper_pid = os.getpid()
        threading.Thread(target=self._sweep_forever, name="streamjoin-kept-producers", daemon=True).start()

    def _sweep_forever(self) -> None:
        while True:
            time.sleep(self.idle_s / 2)
            self.sweep()
