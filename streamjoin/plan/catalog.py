"""The relations a query reads: streams, tables and versioned tables.

A `SourceDef` is built from DDL (`CREATE STREAM|TABLE ...` in any flavour, see
`streamjoin.plan`) or from a conformance case's `sources` entry (`Catalog.from_case_sources`).
Lookup is case-insensitive and takes the whole (possibly dotted) name: `stocks.order_quantity`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from streamjoin.dialect.formats import SchemaRefs
from streamjoin.dialect.types import SqlType
from streamjoin.plan.lookup_spec import JdbcTable
from streamjoin.plan.startup import EARLIEST, Startup

KINDS = ("stream", "table", "versioned_table")


@dataclass(frozen=True)
class SourceWindow:
    """A windowed key (ksqlDB WINDOW_TYPE / WINDOW_SIZE): each record key carries the bounds of
    the window it belongs to. size_ms is None for SESSION windows (their bounds vary)."""

    kind: str  # TUMBLING | HOPPING | SESSION
    size_ms: int | None = None


@dataclass(frozen=True)
class SourceDef:
    """One input relation: what it is (kind), where it lives (topic, partitions, formats) and its
    schema (ordered columns, key columns, event-time column, processing-time column)."""

    name: str
    kind: str
    topic: str
    partitions: int | None = 1
    key_columns: tuple[str, ...] = ()
    columns: Mapping[str, SqlType] = field(default_factory=dict)
    key_format: str = "KAFKA"
    value_format: str = "JSON"
    timestamp: str | None = None
    proctime: str | None = None
    watermark_delay_ms: int | None = None
    virtual_columns: tuple[str, ...] = ()
    # The key columns travel inside the record value, not the record key (a versioned table
    # derived from a key-less history stream, e.g. a Flink temporal table function).
    key_in_value: bool = False
    wrap_single_value: bool = True  # False: a single value column is the bare value, not an object
    value_delimiter: str = ","  # DELIMITED values
    timestamp_format: str | None = None  # the `timestamp` column is text in this (Java) pattern
    window: SourceWindow | None = None
    # Columns read from the record's headers, not its value: (column, header key), the key None
    # for a column holding every header (ksqlDB HEADERS; HEADER('k') for one key).
    header_columns: tuple[tuple[str, str | None], ...] = ()
    # Columns a changelog value format fills from its envelope (Flink METADATA FROM
    # 'value.source.timestamp' ...): (column, metadata key).
    metadata_columns: tuple[tuple[str, str], ...] = ()
    wrap_single_key: bool = False  # a JSON key of one column is an object (Flink's 'key.format'), not the bare value
    schemas: SchemaRefs = SchemaRefs()  # KEY_SCHEMA_ID, VALUE_SCHEMA_ID, *_SCHEMA_FULL_NAME (registry formats)
    # Flink connector options (plan.connectors): a table kept in PostgreSQL, read by lookup joins
    # (no topic); where a first run starts reading the topic; the Kafka cluster the options name;
    # the client properties they give (plan.client_properties; out of the repr: credentials).
    lookup: JdbcTable | None = None
    startup: Startup = EARLIEST
    bootstrap: str | None = None
    client_properties: tuple[tuple[str, str], ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"source {self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        for column in (*self.key_columns, *(c for c in (self.timestamp,) if c)):
            if self.column(column) is None:
                raise ValueError(f"source {self.name}: column {column!r} is not declared")

    def column(self, name: str) -> str | None:
        """The declared spelling of `name` (case-insensitive), or None."""
        lowered = name.lower()
        return next((c for c in self.columns if c.lower() == lowered), None)

    def column_type(self, name: str) -> SqlType | None:
        declared = self.column(name)
        return self.columns[declared] if declared else None

    def is_key(self, name: str) -> bool:
        return name.lower() in (k.lower() for k in self.key_columns)

    @property
    def value_columns(self) -> tuple[str, ...]:
        return tuple(c for c in self.columns if not self.is_key(c))

    @classmethod
    def from_case_source(cls, entry: Mapping) -> "SourceDef":
        columns = {name: SqlType.parse(text) for name, text in entry.get("columns", {}).items()}
        proctime = next((name for name, t in columns.items() if t.proctime), None)
        return cls(
            name=entry["name"],
            kind=entry.get("kind", "stream"),
            topic=entry.get("topic") or entry["name"],
            partitions=entry.get("partitions", 1),
            key_columns=tuple(entry.get("key", ())),
            columns=columns,
            key_format=entry.get("key_format", "KAFKA"),
            value_format=entry.get("value_format", "JSON"),
            timestamp=entry.get("timestamp"),
            proctime=proctime,
        )


class Catalog:
    """Name -> SourceDef, case-insensitive. `define` replaces an existing entry (a later DDL or a
    `WITH x AS (SELECT TABLE ...)` view wins). `views`: name (lower case) -> (name, query) of a
    `CREATE VIEW`, a query planned where a later statement reads it."""

    def __init__(self, sources: Iterable[SourceDef] = ()) -> None:
        self._sources: dict[str, SourceDef] = {}
        self.temporal_functions: dict[str, dict] = {}
        self.views: dict[str, tuple[str, Any]] = {}
        for source in sources:
            self.define(source)

    @classmethod
    def from_case_sources(cls, entries: Iterable[Mapping]) -> "Catalog":
        return cls(SourceDef.from_case_source(entry) for entry in entries)

    def define(self, source: SourceDef) -> None:
        self._sources[source.name.lower()] = source

    def get(self, name: str) -> SourceDef | None:
        return self._sources.get(name.lower())

    def by_topic(self, topic: str) -> SourceDef | None:
        return next((s for s in self._sources.values() if s.topic == topic), None)

    def __contains__(self, name: str) -> bool:
        return name.lower() in self._sources

    def __iter__(self):
        return iter(self._sources.values())

    def copy(self) -> "Catalog":
        clone = Catalog(self._sources.values())
        clone.temporal_functions = dict(self.temporal_functions)
        clone.views = dict(self.views)
        return clone
