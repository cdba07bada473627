"""The conformance runner's own logic: arrival segments and the comparison rules."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.dialect import StreamJoinError
from streamjoin.kafka.records import ConsumedRecord
from streamjoin.runner.arrival import Arrival, arrival_segments
from streamjoin.runner.cases import Case as SuiteCase
from streamjoin.runner.cases import ExpectedRecord, ExpectError
from streamjoin.runner.compare import OutputRecord, compare
from streamjoin.runner.wire import decode_output
from streamjoin.runtime.contract import REPLAY_HEADER
from streamjoin.serde.formats import SerdeSpec, encode_key, encode_value


@dataclass(frozen=True)
class Case:
    inputs: list  # (topic, ts) in arrival order, all on partition 0
    expected: list  # segment sizes


SEGMENT_CASES = [
    # L@1 R@2 L@3: timestamp order is arrival order -> one segment
    Case([("l", 1), ("r", 2), ("l", 3)], [3]),
    # same topic out of order (z@28 then a@12): offset order holds inside a partition -> one
    Case([("l", 10), ("r", 28), ("r", 12)], [3]),
    # equal timestamps, the later-listed topic first in arrival (orders@0 then customers@0):
    # the merge would take customers (lower queue index) first -> cut before customers
    Case([("orders", 0), ("customers", 0)], [1, 1]),
    # a later arrival with a smaller timestamp on another topic -> cut before it
    Case([("a", 5), ("b", 3), ("a", 6)], [1, 2]),
]


@pytest.mark.parametrize("case", SEGMENT_CASES)
def test_arrival_segments_keep_arrival_order_with_fewest_cuts(case):
    arrivals = [Arrival(i, 0, (topic, 0), ts) for i, (topic, ts) in enumerate(case.inputs)]
    assert [len(s) for s in arrival_segments(arrivals)] == case.expected


def test_records_of_different_tasks_never_force_a_cut():
    arrivals = [Arrival(0, 0, ("a", 0), 5), Arrival(1, 1, ("b", 1), 3)]
    assert [len(s) for s in arrival_segments(arrivals)] == [2]


def out(ts, key, value):
    return OutputRecord("t", 0, 0, ts, key, value)


def exp(**fields):
    return ExpectedRecord.from_json(fields)


COMPARE_CASES = [
    # names case-insensitive, numbers by value, unasserted ts/key ignored
    ([exp(value={"L": 11.11})], [out(5, "k", {"l": "11.1100"})], True, "record 0"),
    ([exp(value={"L": 11.11})], [out(5, "k", {"l": 11.1100})], True, None),
    ([exp(ts=4, key="k", value={"v": 1})], [out(4, None, {"v": 1})], True, "record 0"),
    ([exp(value=None, key="C")], [out(1, "C", None)], True, None),
    # multiset: any order, but the strict record must keep its only match
    ([exp(value={"v": 1}), exp(ts=2, value={"v": 1})], [out(2, None, {"v": 1}), out(1, None, {"v": 1})], False, None),
    # no extra records in either mode
    ([exp(value={"v": 1})], [out(1, None, {"v": 1}), out(2, None, {"v": 2})], True, "1 unexpected"),
    ([exp(value={"v": 1})], [out(1, None, {"v": 1}), out(2, None, {"v": 2})], False, "unexpected"),
    ([exp(value={"v": 1}), exp(value={"v": 2})], [out(1, None, {"v": 1})], False, "missing"),
    # a windowed key: the window must match too, when the expected record gives one
    ([exp(key=1, value={"v": 1}, window={"start": 0, "end": 5, "type": "TIME"})],
     [OutputRecord("t", 0, 0, 1, 1, {"v": 1}, (0, 5))], True, None),
    ([exp(key=1, value={"v": 1}, window={"start": 0, "end": 5, "type": "TIME"})],
     [OutputRecord("t", 0, 0, 1, 1, {"v": 1}, (5, 10))], True, "window=[5, 10]"),
    # headers: compared when the expected record lists them (base64 values), in order
    ([exp(value={"v": 1}, headers=[{"key": "h", "value": "IQ=="}])],
     [OutputRecord("t", 0, 0, 1, 1, {"v": 1}, headers=(("h", b"!"),))], True, None),
    ([exp(value={"v": 1}, headers=[{"key": "h", "value": "IQ=="}])],
     [OutputRecord("t", 0, 0, 1, 1, {"v": 1}, headers=(("h", b"#"),))], True, 'headers=[{"key": "h", "value": "Iw=="}]'),
    ([exp(value={"v": 1}, headers=[])], [OutputRecord("t", 0, 0, 1, 1, {"v": 1}, headers=(("h", b"!"),))], True,
     "record 0"),
    ([exp(value={"v": 1}, headers=[{"key": "a", "value": None}, {"key": "b", "value": "AA=="}])],
     [OutputRecord("t", 0, 0, 1, 1, {"v": 1}, headers=(("b", b"\0"), ("a", None)))], True, "record 0"),
    # not listed: not compared
    ([exp(value={"v": 1})], [OutputRecord("t", 0, 0, 1, 1, {"v": 1}, headers=(("h", b"!"),))], True, None),
    # ... and its type: a SESSION key is not the TIME key of the same bounds
    ([exp(key=1, value={"v": 1}, window={"start": 0, "end": 5, "type": "session"})],
     [OutputRecord("t", 0, 0, 5, 1, {"v": 1}, (0, 5), "SESSION")], True, None),
    ([exp(key=1, value={"v": 1}, window={"start": 0, "end": 5, "type": "SESSION"})],
     [OutputRecord("t", 0, 0, 5, 1, {"v": 1}, (0, 5), "TIME")], True, "window=[0, 5] TIME"),
    # ordered over several partitions: per partition (p1: a@0 a@1, p0: b@0), interleaved in any way
    ([exp(key="b", value=1), exp(key="a", value=1), exp(key="a", value=2)],
     [OutputRecord("t", 1, 0, 1, "a", 1), OutputRecord("t", 1, 1, 1, "a", 2), OutputRecord("t", 0, 0, 1, "b", 1)],
     True, None),
    # ... but a partition's own order holds (p1 holds a=2 before a=1)
    ([exp(key="a", value=1), exp(key="a", value=2), exp(key="b", value=1)],
     [OutputRecord("t", 1, 0, 1, "a", 2), OutputRecord("t", 1, 1, 1, "a", 1), OutputRecord("t", 0, 0, 1, "b", 1)],
     True, "record 0"),
    # ... and counts too: a missing record, then an extra one
    ([exp(key="a", value=1), exp(key="b", value=1)], [OutputRecord("t", 1, 0, 1, "a", 1), OutputRecord("t", 1, 1, 1, "a", 1)],
     True, "record 1"),
    ([exp(key="a", value=1)], [OutputRecord("t", 1, 0, 1, "a", 1), OutputRecord("t", 0, 0, 1, "b", 1)],
     True, "1 unexpected"),
]


@pytest.mark.parametrize("expected, actual, ordered, reason", COMPARE_CASES)
def test_compare(expected, actual, ordered, reason):
    verdict = compare(expected, actual, ordered)
    if reason is None:
        assert verdict is None
    else:
        assert verdict is not None and reason in verdict


ERROR_CASES = [
    # substrings (the default): anywhere in the whole message, snippet included
    (ExpectError(("within",)), StreamJoinError("needs a WITHIN clause", "r"), []),
    (ExpectError(("ID",)), StreamJoinError("x", "r", sql="ON l.id = r.id", start=3), []),
    # names: whole names, case-insensitive, in the reason only
    (ExpectError(("L_ID", "left_table"), match="names"), StreamJoinError("LEFT_TABLE.L_ID is missing", "r"), []),
    (ExpectError(("L_ID",), match="names"), StreamJoinError("LEFT_TABLE_L_ID twice", "r"), ["L_ID"]),
    (ExpectError(("ID",), match="names"), StreamJoinError("bad", "r", sql="ON l.id = r.id", start=3), ["ID"]),
    (ExpectError((), match="names"), ValueError("any error"), []),
]


@pytest.mark.parametrize("expect, error, missing", ERROR_CASES)
def test_expected_error_matching(expect, error, missing):
    assert expect.missing(error) == missing


@pytest.mark.parametrize("headers, words", [
    ([{"key": "h", "value": "not base64!"}], "not base64"),
    ([{"value": "AA=="}], "header 0"),
    (["h"], "header 0"),
])
def test_bad_headers_in_a_case_name_the_case(headers, words):
    case = {"id": "c1", "dialect": "ksqldb", "sql": "SELECT 1;",
            "inputs": [{"topic": "t", "ts": 1, "key": None, "value": {}, "headers": headers}]}
    with pytest.raises(ValueError, match=words) as caught:
        SuiteCase.from_json(case)
    assert str(caught.value).startswith("case c1: ")


def test_output_records_compare_bytes_in_base64_and_without_the_replay_header():
    spec = SerdeSpec.of({"K": "INT", "B": "BYTES", "H": "ARRAY<STRUCT<KEY STRING, VALUE BYTES>>"}, ["K"])
    record = ConsumedRecord("t", 0, 0, encode_key(spec, (1,)),
                            encode_value(spec, {"B": b"!", "H": [{"KEY": "k", "VALUE": b"#"}]}), 5, 0,
                            (("h", b"!"), (REPLAY_HEADER, b"q:1:0.0")))
    [decoded] = decode_output([record], spec)
    assert decoded.value == {"B": "IQ==", "H": [{"KEY": "k", "VALUE": "Iw=="}]}
    assert decoded.headers == (("h", b"!"),)
