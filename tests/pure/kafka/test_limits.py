"""Which results their topic's record limit refuses (`kafka.limits.oversized`), measured as the
broker counts them: framing, key, value, headers and the writer's replay header. A batch whose
largest key and value fit together, without headers, is passed without measuring each record."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.kafka.limits import FRAMING_BYTES, HEADER_FRAMING_BYTES, oversized

LIMIT = 1_000
ROOM = LIMIT - FRAMING_BYTES  # key and value bytes a record without headers may have


@dataclass(frozen=True)
class Case:
    name: str
    records: list[tuple]  # (topic, key, value, headers)
    refused: list[int]


CASES = [
    Case("all fit, exactly at the limit", [("t", b"k", b"v" * (ROOM - 1), None), ("t", None, None, None)], []),
    Case("one byte over", [("t", b"k", b"v" * ROOM, None), ("t", b"k", b"v", None)], [0]),
    # The largest key and the largest value are in different records: each record still fits.
    Case("largest key and value apart",
         [("t", b"k" * (ROOM - 10), b"", None), ("t", b"", b"v" * (ROOM - 10), None)], []),
    Case("a header tips it over",
         [("t", b"k", b"v" * (ROOM - 1 - HEADER_FRAMING_BYTES - 2), (("h", b"xy"),)), ("t", b"k", b"v", None)], [0]),
    Case("headers that fit", [("t", b"k", b"v", (("h", b"x"),))], []),
    # Each topic has its own limit.
    Case("per topic", [("small", b"k", b"v" * 200, None), ("t", b"k", b"v" * 200, None)], [0]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_records_over_their_topics_limit_are_refused(case: Case) -> None:
    limits = {"t": LIMIT, "small": FRAMING_BYTES + 100}
    topics, keys, values, headers = (list(column) for column in zip(*case.records))
    refused = oversized(limits, topics, keys, values, headers)
    assert [row for row, _ in refused] == case.refused
    assert all("max.message.bytes" in reason for _, reason in refused)
