"""A stop between triggers: `finish_trigger` waits while the stream's trigger is under way, gives
up at its timeout (the caller then interrupts the batch), and returns at once for a stream that is
between triggers or no longer active (it failed). Stand-in streams answer as Spark's do."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.app.engine import Engine
from streamjoin.spark.query import finish_trigger


@dataclass
class Stream:
    busy_polls: int  # how many more polls find the trigger active (-1: always)
    isActive: bool = True

    @property
    def status(self) -> dict:
        busy = self.busy_polls != 0
        self.busy_polls -= 1 if self.busy_polls > 0 else 0
        return {"isTriggerActive": busy}


@pytest.mark.parametrize("stream, timeout_s, finished", [
    (Stream(busy_polls=3), 5.0, True),  # its batch ends after three polls
    (Stream(busy_polls=0), 5.0, True),  # between triggers
    (Stream(busy_polls=-1, isActive=False), 5.0, True),  # failed: nothing to wait for
    (Stream(busy_polls=-1), 0.2, False),  # still running at the timeout
])
def test_finish_trigger(stream, timeout_s, finished):
    assert finish_trigger(stream, timeout_s) is finished


def test_the_engine_waits_on_a_stream_not_a_query():
    assert Engine(spark=object()).finish_trigger(Stream(busy_polls=2)) is True
