"""Flink's lookup join (`JOIN t FOR SYSTEM_TIME AS OF o.proc_time`, t a database table): each left
(probe) row, when the task processes it, is joined with the rows the table holds for its key at
that moment, read through a `LookupSource` behind a per-task `LookupRowCache`. Nothing is kept
in state: later changes of the table do not touch past results, and a row the cache holds is
served as it was loaded until the cache lets it go (its TTL, its size).

Worked timeline (INNER, cache expiring 2 s after write; customers holds 7 -> Ann):

    time   arrival                      table / cache                 emitted
    0.0 s  order a, customer 7          load 7 -> [Ann]               +I [a, Ann]
    0.5 s  (table: 7 renamed Bea)       cache still 7 -> [Ann]        -
    1.0 s  order b, customer 7          cache hit                     +I [b, Ann]
    2.5 s  order c, customer 7          expired: load 7 -> [Bea]      +I [c, Bea]
    3.0 s  order d, customer 9          load 9 -> [] (missing)        - (LEFT: +I [d, NULL])
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Hashable, Protocol

from streamjoin.kinds import JoinType
from streamjoin.operators.base import Change, JoinProcessor, Record, Residual, Row, RowKind, Side, accepts, padded
from streamjoin.operators.changelog import require_join_type
from streamjoin.plan.lookup_spec import LookupCache


class LookupSource(Protocol):
    """What a lookup join reads: the rows whose `key_columns` equal `key` (all of them: a lookup
    key need not be unique). A database client in the tasks; `InMemoryLookupSource` in tests."""

    def lookup(self, key: tuple) -> list[Row]: ...

    def close(self) -> None: ...


class InMemoryLookupSource:
    """A table held in a list, changed in place (`put`, `delete`): the reference operator's tests
    read it as a task would read the database. `lookups` counts the reads that reached it."""

    def __init__(self, key_columns: tuple[str, ...], rows: list[Row] = ()) -> None:
        self.key_columns, self.rows, self.lookups = key_columns, [dict(r) for r in rows], 0

    def lookup(self, key: tuple) -> list[Row]:
        self.lookups += 1
        return [dict(r) for r in self.rows if tuple(r.get(c) for c in self.key_columns) == tuple(key)]

    def put(self, row: Row, match: str) -> None:
        """Replace the rows whose `match` column equals the row's (or add it)."""
        self.rows = [r for r in self.rows if r.get(match) != row.get(match)] + [dict(row)]

    def delete(self, match: str, value) -> None:
        self.rows = [r for r in self.rows if r.get(match) != value]

    def close(self) -> None:
        pass


class LookupRowCache:
    """A task's cache of looked-up keys (Flink's PARTIAL cache): at most `max_rows` keys, the
    least recently used evicted first; an entry expires `expire_after_write_ms` after its load
    and `expire_after_access_ms` after it was last served. `clock()`: milliseconds."""

    def __init__(self, spec: LookupCache, clock: Callable[[], float]) -> None:
        self.spec, self.clock = spec, clock
        self.entries: OrderedDict[Hashable, tuple[list[Row], float, float]] = OrderedDict()  # rows, written, accessed

    def get(self, key: Hashable) -> list[Row] | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        rows, written, accessed = entry
        now = self.clock()
        if self._expired(now - written, self.spec.expire_after_write_ms) or \
                self._expired(now - accessed, self.spec.expire_after_access_ms):
            del self.entries[key]
            return None
        self.entries[key] = (rows, written, now)
        self.entries.move_to_end(key)
        return rows

    def put(self, key: Hashable, rows: list[Row]) -> None:
        if not rows and not self.spec.cache_missing_key:
            return
        now = self.clock()
        self.entries[key] = (rows, now, now)
        self.entries.move_to_end(key)
        while self.spec.max_rows is not None and len(self.entries) > self.spec.max_rows:
            self.entries.popitem(last=False)

    @staticmethod
    def _expired(age: float, limit: int | None) -> bool:
        return limit is not None and age >= limit


def _now_ms() -> float:
    return time.monotonic() * 1000


@dataclass(frozen=True)
class LookupJoinConfig:
    """`connect()` opens the task's `LookupSource` (on the first lookup, in the task); `alias`:
    the table's relation name in the result; `cache`: the table's lookup cache; `max_retries`:
    how many times a failed lookup is tried again (on a new connection) before the task fails."""

    connect: Callable[[], LookupSource]
    alias: str
    join_type: JoinType = JoinType.INNER
    residual: Residual | None = None
    cache: LookupCache = LookupCache()
    max_retries: int = 3
    clock: Callable[[], float] = _now_ms

    def __post_init__(self) -> None:
        require_join_type("a lookup join", self.join_type, (JoinType.INNER, JoinType.LEFT))


class LookupJoin(JoinProcessor):
    """Joins each left record with the table's rows for its key (see the module's timeline).
    Output ts = the probe record's ts. A null key looks nothing up (LEFT pads the row); right
    records do not exist: the table is read, never streamed."""

    def __init__(self, config: LookupJoinConfig) -> None:
        super().__init__()
        self.config = config
        self._source: LookupSource | None = None
        self._cache = LookupRowCache(config.cache, config.clock) if config.cache.enabled else None

    def process(self, record: Record) -> list[Change]:
        if record.side is not Side.LEFT:
            raise ValueError("a lookup join reads its table, it takes no right records")
        if record.value is None:
            self.metrics.count("null_value")
            return []
        if record.key is None:
            self.metrics.count("null_key")
        rows = [] if record.key is None else self._rows(record.key)
        out = [Change._make((RowKind.INSERT, record.key, record.value, right, record.ts))
               for right in ({self.config.alias: row} for row in rows)
               if accepts(self.config.residual, record.value, right)]
        if not out and self.config.join_type is JoinType.LEFT:
            out.append(padded(Side.LEFT, record.key, record.value, record.ts))
        return out

    def _rows(self, key: Hashable) -> list[Row]:
        rows = self._cache.get(key) if self._cache is not None else None
        if rows is None:
            rows = self._read(key if isinstance(key, tuple) else (key,))
            if self._cache is not None:
                self._cache.put(key, rows)
        return rows

    def _read(self, key: tuple) -> list[Row]:
        for attempt in range(self.config.max_retries + 1):
            try:
                if self._source is None:
                    self._source = self.config.connect()
                return self._source.lookup(key)
            except (OSError, ConnectionError) as error:  # a lost connection: open a new one
                self.close()
                if attempt == self.config.max_retries:
                    raise ConnectionError(f"lookup of {self.config.alias} failed {attempt + 1} times: {error}") from None
        return []

    def close(self) -> None:
        if self._source is not None:
            source, self._source = self._source, None
            source.close()

    def __getstate__(self) -> dict:
        """A task's state carries no connection and no cache: a restored task opens its own."""
        state = dict(self.__dict__)
        state["_source"] = None
        state["_cache"] = LookupRowCache(self.config.cache, self.config.clock) if self.config.cache.enabled else None
        return state
