"""Schema inference: the columns of a declaration that lists none, read from its topic's schema in
a schema registry (ksqlDB: `CREATE STREAM s WITH (kafka_topic='t', value_format='AVRO')`).

The planner sits below the registry client (`streamjoin.serde.registry_codecs`), so the client
hands it a reader: `provide` sets the process default, `using` one for a block (a test runner's
topics carry a per-case prefix; planning threads each keep their own)."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Callable, Iterator

from streamjoin.dialect.types import SqlType

# (topic, side "key" | "value", format, schema id or None, message full name or None) -> the
# columns of that side, or None when the subject holds no schema
Reader = Callable[[str, str, str, "int | None", "str | None"], "list[tuple[str, SqlType]] | None"]

_default: list[Reader | None] = [None]
_current: ContextVar[Reader | None] = ContextVar("streamjoin_schema_reader", default=None)


def provide(reader: Reader) -> None:
    _default[0] = reader


@contextmanager
def using(reader: Reader) -> Iterator[None]:
    token = _current.set(reader)
    try:
        yield
    finally:
        _current.reset(token)


def inferred(topic: str, side: str, fmt: str, schema_id: int | None, full_name: str | None):
    """The columns of `side` from the registry, None when its subject is empty; LookupError when
    no registry client is loaded."""
    reader = _current.get() or _default[0]
    if reader is None:
        raise LookupError("no schema registry client is loaded to read the schema from")
    return reader(topic, side, fmt, schema_id, full_name)
