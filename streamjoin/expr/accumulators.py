"""Aggregate accumulators with retraction: one running aggregate of one group.

Accumulators take `add(value)` for an inserted row and `retract(value)` for a retracted one
(Flink -U/-D, a ksqlDB table update's old value), so an aggregate over a changelog stays exact.
NULL values are ignored by every aggregate except COUNT(*). Every accumulator is a plain
picklable object: the Spark adapter checkpoints them with the rest of a task's state.

Timeline for `SELECT name, COUNT(*) AS n, MAX(amount) AS top ... GROUP BY name`, group 'John':
    +I (John, 5)   -> rows 1, COUNT 1, MAX {5}        -> (John, 1, 5)
    +I (John, 9)   -> rows 2, COUNT 2, MAX {5, 9}     -> (John, 2, 9)
    -D (John, 9)   -> rows 1, COUNT 1, MAX {5}        -> (John, 1, 5)   (MAX falls back: multiset)
    -D (John, 5)   -> rows 0: the group is empty; the caller deletes it (`GroupState.rows == 0`)

`merge(other)` folds another accumulator of the same aggregate into this one, as if this one had
received the other's rows too: a record that bridges two sessions of a WINDOW SESSION makes one
session of them (`streamjoin.runtime.sessions`). An aggregate without it cannot be windowed by
session (`can_merge`), and the compiler rejects that query.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from sqlglot import exp


class Accumulator(ABC):
    @abstractmethod
    def add(self, value: Any) -> None: ...

    @abstractmethod
    def retract(self, value: Any) -> None: ...

    @abstractmethod
    def result(self) -> Any: ...

    def merge(self, other: Accumulator) -> None:
        """Take in `other`'s rows (`other` is of the same class and is not used afterwards)."""
        raise NotImplementedError(f"{type(self).__name__} cannot merge")

    @classmethod
    def can_merge(cls) -> bool:
        return cls.merge is not Accumulator.merge


def _never_added(value: Any) -> ValueError:
    return ValueError(f"retracting {value!r}, which this aggregate never received")


def _take_one(counts: Counter, value: Any) -> bool:
    """One `value` fewer in `counts`; True when that was its last. A value never added is an error."""
    if counts[value] == 0:
        del counts[value]
        raise _never_added(value)
    counts[value] -= 1
    if counts[value]:
        return False
    del counts[value]
    return True


class CountRows(Accumulator):
    """COUNT(*): every row, NULL or not."""

    def __init__(self) -> None:
        self.count = 0

    def add(self, value: Any) -> None:
        self.count += 1

    def retract(self, value: Any) -> None:
        if self.count == 0:
            raise _never_added(value)
        self.count -= 1

    def result(self) -> int:
        return self.count

    def merge(self, other: CountRows) -> None:
        self.count += other.count


class Count(CountRows):
    """COUNT(x): the non-NULL values."""

    def add(self, value: Any) -> None:
        if value is not None:
            super().add(value)

    def retract(self, value: Any) -> None:
        if value is not None:
            super().retract(value)


class Sum(Accumulator):
    """SUM(x): NULL until a non-NULL value arrives (and again once all are retracted). INT
    stays int and DECIMAL stays Decimal, so retraction is exact for them."""

    def __init__(self) -> None:
        self.total: Any = 0
        self.count = 0

    def add(self, value: Any) -> None:
        if value is not None:
            self.total = _plus(self.total, value)
            self.count += 1

    def retract(self, value: Any) -> None:
        if value is not None:
            if self.count == 0:
                raise _never_added(value)
            self.total = _plus(self.total, -value)
            self.count -= 1
            if self.count == 0:
                self.total = 0  # drop float residue from add/retract cycles

    def result(self) -> Any:
        return self.total if self.count else None

    def merge(self, other: Sum) -> None:
        if other.count:
            self.total = _plus(self.total, other.total)
            self.count += other.count


class SumFromZero(Sum):
    """SUM(x) that starts at 0: 0 while no non-NULL value is present (ksqlDB's SUM)."""

    def result(self) -> Any:
        return self.total


def _plus(total: Any, value: Any) -> Any:
    if isinstance(total, Decimal) and isinstance(value, float):
        return float(total) + value
    if isinstance(total, float) and isinstance(value, Decimal):
        return total + float(value)
    return total + value


class Avg(Sum):
    """AVG(x): DOUBLE for INT/DOUBLE input (ksqlDB; Flink would truncate INT), Decimal for
    DECIMAL input."""

    def result(self) -> Any:
        return self.total / self.count if self.count else None


class _Extreme(Accumulator):
    """MIN/MAX over a multiset of the values (value -> multiplicity), so retracting the current
    extreme falls back to the next one. The result is cached until the multiset changes."""

    pick: Callable[[Any], Any]

    def __init__(self) -> None:
        self.values: Counter = Counter()
        self._cached: Any = None
        self._stale = False

    def add(self, value: Any) -> None:
        if value is not None:
            self.values[value] += 1
            self._stale = True

    def retract(self, value: Any) -> None:
        if value is not None:
            _take_one(self.values, value)
            self._stale = True

    def merge(self, other: _Extreme) -> None:
        self.values.update(other.values)
        self._stale = True

    def result(self) -> Any:
        if self._stale:
            self._cached = type(self).pick(self.values) if self.values else None
            self._stale = False
        return self._cached


class Min(_Extreme):
    pick = staticmethod(min)


class Max(_Extreme):
    pick = staticmethod(max)


class Distinct(Accumulator):
    """AGG(DISTINCT x): the inner aggregate sees each distinct value once, while it lasts."""

    def __init__(self, inner: Accumulator) -> None:
        self.inner = inner
        self.seen: Counter = Counter()

    def add(self, value: Any) -> None:
        if value is not None:
            self.seen[value] += 1
            if self.seen[value] == 1:
                self.inner.add(value)

    def retract(self, value: Any) -> None:
        if value is not None and _take_one(self.seen, value):
            self.inner.retract(value)

    def result(self) -> Any:
        return self.inner.result()

    def merge(self, other: Distinct) -> None:
        # the inner aggregate takes a value of the other side's only where this side lacks it,
        # so DISTINCT merges whatever its inner aggregate is
        for value, times in other.seen.items():
            if not self.seen[value]:
                self.inner.add(value)
            self.seen[value] += times


# Aggregate node class -> accumulator class; extend for new aggregates.
ACCUMULATORS: dict[type[exp.AggFunc], type[Accumulator]] = {
    exp.Count: Count,
    exp.Sum: Sum,
    exp.Avg: Avg,
    exp.Min: Min,
    exp.Max: Max,
}
