"""Contracts every join operator shares: input records, changelog output, stream time, state.

Operators are pure Python: a `JoinProcessor` takes `Record`s one at a time, in the order the task
processes them, and returns the `Change`s they cause. The Spark adapter (`streamjoin.spark`) runs
one processor per task (input partition) inside a stateful operator; tests drive them directly.

Projection is not an operator's business: a `Change` carries the left and right rows that joined
(either may be None for a null-padded outer row) and the adapter projects them.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterator, NamedTuple

from streamjoin.kinds import JoinType  # noqa: F401 - shared with the planner; the operators' API

# Event times are epoch milliseconds. End of input advances time to END_OF_TIME (a bounded
# source's final watermark, as in Flink), which closes every window.
END_OF_TIME = 2**62
BEGINNING_OF_TIME = -(2**62)

Row = dict[str, Any]


class Side(enum.IntEnum):
    LEFT = 0
    RIGHT = 1

    @property
    def other(self) -> "Side":
        return Side(1 - self)


# A residual condition over a candidate pair (left row, right row): the non-equi or multi-column
# part of ON. Only `True` accepts (SQL: NULL is not true); for outer joins a rejected pair counts
# as no match.
Residual = Callable[[Row | None, Row | None], "bool | None"]


def accepts(residual: Residual | None, left: Row | None, right: Row | None) -> bool:
    return residual is None or residual(left, right) is True


def oriented(side: Side, this: Row | None, other: Row | None) -> tuple[Row | None, Row | None]:
    """(left row, right row) of a pair seen from `side`."""
    return (this, other) if side is _LEFT else (other, this)


def padded(side: Side, key: Hashable | None, row: Row, ts: int) -> Change:
    """The null-padded outer row of an unmatched `row` of `side`."""
    left, right = oriented(side, row, None)
    return Change._make((_INSERT, key, left, right, ts))


class RowKind(enum.Enum):
    """Flink's RowKind: what a changelog row does to the result."""

    INSERT = "+I"
    UPDATE_BEFORE = "-U"
    UPDATE_AFTER = "+U"
    DELETE = "-D"

    @property
    def is_retraction(self) -> bool:
        return self in (RowKind.UPDATE_BEFORE, RowKind.DELETE)


# Members the per-record paths use, looked up once (an enum class attribute is a slow lookup).
_LEFT, _INSERT = Side.LEFT, RowKind.INSERT


class Record(NamedTuple):
    """One input record as the join sees it (a tuple, built with `_make` on the hot path).

    `key` is the join key (a tuple for multi-column keys; None for a null key); `value` None is a
    null-value record on a stream and a tombstone on a table. `ts` is the event time.
    `seq` is the arrival position within the task, used only to break timestamp ties. `kind`:
    what the row does to its input when that input is a changelog (an upstream join's or
    aggregate's result, a normalized upsert table): a retraction (-U, -D) withdraws `value`.
    """

    side: Side
    key: Hashable | None
    value: Row | None
    ts: int
    seq: int = 0
    kind: RowKind = RowKind.INSERT


class Change(NamedTuple):
    """One changelog row of a join result (a tuple: several are built per record; the hot paths
    use `_make`, about twice as fast as the constructor's argument handling).

    `key` is the result key. For INSERT / UPDATE_AFTER, `left` and `right` are the joined rows (one
    may be None: a null-padded outer row). For DELETE of a keyed result (ksqlDB tombstone) both are
    None; for a Flink retraction (-D / -U) they hold the retracted row.
    """

    kind: RowKind
    key: Hashable | None
    left: Row | None
    right: Row | None
    ts: int

    @property
    def is_tombstone(self) -> bool:
        return self.kind is RowKind.DELETE and self.left is None and self.right is None


@dataclass
class StreamTime:
    """The largest event time a task has seen (ksqlDB/Kafka Streams stream time).

    It never goes back: an out-of-order record does not move it.
    """

    now: int = BEGINNING_OF_TIME

    def observe(self, ts: int) -> int:
        if ts > self.now:
            self.now = ts
        return self.now


class KeyValueStore(ABC):
    """The state an operator keeps, behind the smallest interface that serves every join. A value
    changed in place must be put back: a persistent store writes only what was put or deleted."""

    @abstractmethod
    def get(self, key: Hashable, default: Any = None) -> Any: ...

    @abstractmethod
    def put(self, key: Hashable, value: Any) -> None: ...

    @abstractmethod
    def delete(self, key: Hashable) -> None: ...

    @abstractmethod
    def items(self) -> Iterator[tuple[Hashable, Any]]: ...

    @abstractmethod
    def __len__(self) -> int: ...

    def accessors(self) -> tuple[Callable[[Hashable], Any], Callable[[Hashable, Any], None]]:
        """(get, put) for a loop that calls them for every record of a run."""
        return self.get, self.put


class InMemoryStore(KeyValueStore):
    """A dict-backed store; picklable, so the Spark adapter can checkpoint a whole task."""

    def __init__(self) -> None:
        self._data: dict[Hashable, Any] = {}

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self._data.get(key, default)

    def put(self, key: Hashable, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: Hashable) -> None:
        self._data.pop(key, None)

    def items(self) -> Iterator[tuple[Hashable, Any]]:
        return iter(list(self._data.items()))

    def accessors(self) -> tuple[Callable[[Hashable], Any], Callable[[Hashable, Any], None]]:
        return self._data.get, self._data.__setitem__  # the dict's own: no Python call between

    def __len__(self) -> int:
        return len(self._data)


@dataclass
class JoinMetrics:
    """Records a join did not join, counted as ksqlDB/Kafka Streams count them (never silently
    dropped): `late` (behind window + grace; with a stream-stream join's `store_retention`, not
    kept by its side's window store, though still joined), `null_key`, `null_value`, `expired`
    (state TTL)."""

    counts: Counter = field(default_factory=Counter)

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] += n

    def __getitem__(self, what: str) -> int:
        return self.counts[what]


class JoinProcessor(ABC):
    """A running join: configuration is given at construction and never changes; state lives in
    stores and the stream time; `metrics` counts what was not joined. Most joins clock themselves
    from the records' times; one that `needs_watermarks` is driven by `advance_watermark`."""

    needs_watermarks = False
    # How far behind its inputs' watermark an output row's time can be (an interval join emits
    # a pair as late as the interval allows), so a downstream window waits that much longer.
    watermark_hold = 0

    def __init__(self) -> None:
        self.metrics = JoinMetrics()

    @abstractmethod
    def process(self, record: Record) -> list[Change]:
        """Apply one record; return the changes it causes, in emission order."""

    def advance_to(self, ts: int) -> list[Change]:
        """Time moved to `ts` without a record (watermark, end of input with END_OF_TIME).
        Returns what closing windows emit. Operators without time-driven output return []."""
        return []

    def advance_watermark(self, side: Side, watermark: int) -> list[Change]:
        """Input `side` promises no more rows behind `watermark` (its source's largest event time
        minus the declared delay, passed down the pipeline)."""
        return []

    def process_all(self, records: list[Record]) -> list[Change]:
        out: list[Change] = []
        for record in records:
            out.extend(self.process(record))
        return out
