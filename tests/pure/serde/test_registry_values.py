"""How a decoded registry record becomes columns (`registry_values.payload_reader`), with PROTOBUF's
"" as a NULL DECIMAL at any depth, whichever shape the record has; a field of another shape than
its declared type stays a decode error."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import pytest

from streamjoin.dialect.types import parse_type
from streamjoin.serde.registry_values import payload_reader
from streamjoin.serde.values import DecodeError


@dataclass(frozen=True)
class Case:
    name: str
    columns: dict
    payload: dict
    expected: dict | type  # the columns, or the error


CASES = [
    Case("a column", {"D": "DECIMAL(4, 2)", "N": "INT"}, {"D": "", "N": 1}, {"D": None, "N": 1}),
    Case("in a STRUCT column", {"S": "STRUCT<A DECIMAL(4, 2), B STRING>", "N": "INT"},
         {"S": {"A": "", "B": ""}, "N": 1}, {"S": {"A": None, "B": ""}, "N": 1}),
    Case("the message is the one STRUCT column", {"S": "STRUCT<A DECIMAL(4, 2), B STRING>"},
         {"A": "", "B": "x"}, {"S": {"A": None, "B": "x"}}),
    Case("a one-field message of another name", {"D": "DECIMAL(4, 2)"}, {"X": ""}, {"D": None}),
    Case("array elements and map values", {"L": "ARRAY<DECIMAL(4, 2)>", "M": "MAP<STRING, DECIMAL(4, 2)>"},
         {"L": ["", "1.5"], "M": {"k": "", "j": "0.25"}},
         {"L": [None, Decimal("1.50")], "M": {"k": None, "j": Decimal("0.25")}}),
    Case("an ARRAY declared, a string read", {"L": "ARRAY<DECIMAL(4, 2)>", "N": "INT"}, {"L": "15", "N": 1},
         DecodeError),
    Case("a MAP declared, a list read", {"M": "MAP<STRING, DECIMAL(4, 2)>", "N": "INT"}, {"M": ["1"], "N": 1},
         DecodeError),
    Case("a STRUCT declared, a string read", {"S": "STRUCT<A DECIMAL(4, 2)>", "N": "INT"}, {"S": "x", "N": 1},
         DecodeError),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_protobuf_reads_an_empty_decimal_as_null_at_any_depth(case):
    read = payload_reader([(n, parse_type(t)) for n, t in case.columns.items()], "value", blank_decimals=True)
    if isinstance(case.expected, dict):
        assert read(case.payload) == case.expected
    else:
        with pytest.raises(case.expected):
            read(case.payload)


def test_other_formats_keep_an_empty_decimal_an_error():
    read = payload_reader([("D", parse_type("DECIMAL(4, 2)")), ("N", parse_type("INT"))], "value")
    with pytest.raises(DecodeError, match="DECIMAL"):
        read({"D": "", "N": 1})
