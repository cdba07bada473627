"""The UI's previews decode records with their topic's format into columns named with their SQL
types; bytes no format reads are text when printable, else marked hex (never glyphs); a dead
letter's key is decoded with its source's key format, its value kept as text."""

from dataclasses import dataclass

import pytest

from streamjoin.app import topics
from streamjoin.app.project import load_project
from tests.paths import REPO


@pytest.fixture(scope="module")
def formats():
    return topics.topic_formats(load_project(REPO / "sql").query("pageviews_enriched"))


@dataclass(frozen=True)
class Case:
    name: str
    topic: str
    key: bytes | None
    value: bytes | None
    expected: dict
    dead_letter: bool = False


CASES = [
    Case("a source record", "pageviews", b'"User_1"', b'{"viewtime": 3, "pageid": "Page_1"}',
         {"USERID STRING (key)": '"User_1"', "VIEWTIME BIGINT": 3, "PAGEID STRING": "Page_1"}),
    Case("an output record", "PAGEVIEWS_ENRICHED", b'"User_1"',
         b'{"PAGEID": "Page_1", "REGIONID": "Region_1", "GENDER": "MALE"}',
         {"USERID STRING (key)": '"User_1"', "PAGEID STRING": "Page_1", "REGIONID STRING": "Region_1",
          "GENDER STRING": "MALE"}),
    Case("a tombstone", "users", b'"User_1"', None, {"USERID STRING (key)": '"User_1"', "tombstone": True}),
    Case("a dead letter: key decoded, value as text", "pageviews", b'"User_9"', b'{"viewtime": ',
         {"USERID STRING (key)": '"User_9"', "value (raw)": '{"viewtime": '}, dead_letter=True),
    Case("a dead letter with binary bytes", "pageviews", b'"User_9"', b"\x00\x01\xff",
         {"USERID STRING (key)": '"User_9"', "value (raw)": "hex 0001ff"}, dead_letter=True),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_typed_columns(formats, case):
    spec = formats[case.topic]
    shown = topics.letter_columns(spec, case.key, case.value, 0) if case.dead_letter else \
        topics.typed_columns(spec, case.key, case.value, 0)
    assert shown == case.expected


@pytest.mark.parametrize("data, text", [(b"plain", "plain"), ((1).to_bytes(4, "big"), "hex 00000001"),
                                        (b"\xff\xfe", "hex fffe"), (None, None)])
def test_raw_text_is_never_glyphs(data, text):
    assert topics.raw_text(data) == text
