"""Java DateTimeFormatter patterns (ksqlDB TIMESTAMP_FORMAT, TIMESTAMPTOSTRING, STRINGTOTIMESTAMP):
formatting epoch millis in a zone, parsing text back, and what is rejected."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.serde.java_time import format_millis, parse_millis

T = 1_526_075_913_123  # 2018-05-11 21:58:33.123 UTC, a Friday


@dataclass
class Case:
    pattern: str
    text: str
    zone: str | None = None
    round_trips: bool = True  # parsing `text` gives T back (false where the pattern drops a field)


CASES = [
    Case("yyyy-MM-dd HH:mm:ss.SSS", "2018-05-11 21:58:33.123"),
    Case("yyyy-MM-dd HH:mm:ss zzz", "2018-05-11 22:58:33 BST", "Europe/London", round_trips=False),
    Case("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2018-05-11T21:58:33.123Z"),
    Case("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "2018-05-11T23:58:33.123+02:00", "+02:00"),
    Case("dd/MMM/yy h:mm:ss.SSS a", "11/May/18 9:58:33.123 PM"),
    Case("EEE, d MMMM yyyy HH:mm:ss.SSSZ", "Fri, 11 May 2018 21:58:33.123+0000"),
    Case("yyyy-DDD HH:mm:ss.SSS 'day'", "2018-131 21:58:33.123 day"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.pattern)
def test_format_and_parse(case):
    assert format_millis(T, case.pattern, case.zone) == case.text
    if case.round_trips:
        assert parse_millis(case.text, case.pattern, case.zone) == T


def test_text_without_an_offset_is_read_in_the_zone():
    assert parse_millis("2018-05-11 22:58:33", "yyyy-MM-dd HH:mm:ss", "Europe/London") == T - 123


@pytest.mark.parametrize("call, message", [
    (lambda: format_millis(T, "yyyy Q"), "not supported"),
    (lambda: format_millis(T, "yyyy", "Mars/Olympus"), "unknown time zone"),
    (lambda: parse_millis("2018/05/11", "yyyy-MM-dd"), "does not match"),
])
def test_rejections(call, message):
    with pytest.raises(ValueError, match=message):
        call()
