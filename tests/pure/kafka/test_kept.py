"""KeptProducers: a process's producers kept between writes, dropped once idle."""

import os
import threading
import time

from streamjoin.kafka.kept import KeptProducers


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def made(log: list, name: str):
    def make():
        log.append(name)
        return (name, [])
    return make


def test_a_producer_is_kept_until_idle_and_one_in_use_is_never_dropped():
    clock, log = Clock(), []
    kept = KeptProducers(idle_s=60, clock=clock)
    # t=0 a write takes and releases "a"; t=40 it gets "a" back; t=45 a write of "b" starts and stays
    # in use; t=90 the sweep keeps "a" (idle 50 s); t=120 it drops "a" (idle 80 s), never "b".
    assert kept.take("a", made(log, "a"))[0] == "a"
    kept.release("a")
    clock.now = 40
    assert kept.take("a", made(log, "a again"))[0] == "a"
    kept.release("a")
    clock.now = 45
    kept.take("b", made(log, "b"))
    clock.now = 90
    assert kept.sweep() == 0 and len(kept) == 2
    clock.now = 120
    assert kept.sweep() == 1 and len(kept) == 1
    assert kept.take("a", made(log, "a anew"))[0] == "a anew"
    assert log == ["a", "b", "a anew"]


def test_a_dropped_producer_is_made_again_and_each_thread_has_its_own():
    log = []
    kept = KeptProducers()
    kept.take("a", made(log, "first"))
    kept.drop("a")  # a failed write
    assert kept.take("a", made(log, "second"))[0] == "second"
    other = threading.Thread(target=lambda: kept.take("a", made(log, "other thread")))
    other.start()
    other.join()
    assert log == ["first", "second", "other thread"] and len(kept) == 2


def test_a_forked_process_never_drops_its_parents_producers():
    clock = Clock()
    kept = KeptProducers(idle_s=1, clock=clock)
    kept.take("a", made([], "parent's"))
    kept.release("a")
    child = os.fork()
    if child == 0:  # the child: the parent's producer is long idle here, and still not its own
        clock.now = 10
        os._exit(kept.sweep())
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and len(kept) == 1


def test_the_sweeper_thread_drops_an_idle_producer():
    kept = KeptProducers(idle_s=0.05)
    kept.take("a", made([], "a"))
    kept.release("a")
    deadline = time.monotonic() + 5
    while len(kept) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(kept) == 0
