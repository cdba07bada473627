"""Columns read from a record's headers (ksqlDB `HEADERS` and `HEADER('k')`, Flink
`METADATA FROM 'headers'`), not its value.

Kafka headers are an ordered list of (key, bytes) pairs in which a key may repeat. A `HEADERS`
column holds all of them as an ARRAY<STRUCT<KEY STRING, VALUE BYTES>> (an empty array when there
are none, never NULL); a `HEADER('k')` column the BYTES of the last header named k, NULL when
there is none (the last, because a producer that sets a header again appends it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from streamjoin.dialect.types import SqlType

Headers = Sequence[tuple[str, "bytes | None"]]


def struct_names(kind: SqlType) -> tuple[str, str]:
    """The field names, as declared, of a HEADERS column's struct (KEY, VALUE)."""
    (key, _), (value, _) = kind.elements[0].fields
    return key, value


def header_value(headers: Headers, key: str | None, names: tuple[str, str]) -> Any:
    """The value of a header column reading `key` (None: every header, as structs with the
    field `names`) from `headers`."""
    if key is None:
        key_field, value_field = names
        return [{key_field: k, value_field: None if v is None else bytes(v)} for k, v in headers]
    found = None
    for k, v in headers:
        if k == key:
            found = None if v is None else bytes(v)
    return found


def header_map(headers: Headers) -> dict[str, bytes | None]:
    """Flink's `headers` metadata: each key's last value (a MAP<STRING, BYTES>, `{}` when none)."""
    return {k: None if v is None else bytes(v) for k, v in headers}
