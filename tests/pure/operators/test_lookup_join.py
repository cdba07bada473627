"""Flink's lookup join operator against an in-memory table (the same `LookupSource` interface the
tasks' PostgreSQL client implements): what each probe row joins as the table changes, the cache's
TTL (after write, after access), its size bound, missing keys cached or not, retries on a lost
connection, and a task's pickled state carrying no connection."""

from __future__ import annotations

import pickle
from dataclasses import dataclass

import pytest

from streamjoin.operators.base import Record, RowKind, Side
from streamjoin.kinds import JoinType
from streamjoin.operators.lookup_join import InMemoryLookupSource, LookupJoin, LookupJoinConfig
from streamjoin.plan.lookup_spec import LookupCache

ANN, BEA, CAL = {"id": 7, "name": "Ann"}, {"id": 7, "name": "Bea"}, {"id": 8, "name": "Cal"}


@dataclass
class Clock:
    now: float = 0.0

    def __call__(self) -> float:
        return self.now


def order(order_id: str, customer: int | None, ts: int = 0) -> Record:
    key = None if customer is None else (customer,)
    return Record(Side.LEFT, key, {"o": {"order_id": order_id, "customer_id": customer}}, ts)


def joined(changes) -> list[tuple]:
    return [(c.kind, c.left["o"]["order_id"], None if c.right is None else c.right["c"]["name"]) for c in changes]


def join(table, join_type=JoinType.INNER, cache=LookupCache(), clock=None, residual=None):
    return LookupJoin(LookupJoinConfig(lambda: table, "c", join_type, residual, cache, clock=clock or Clock()))


I = RowKind.INSERT
# (cache, steps: (time ms, table change or None, probe order id, customer), expected per probe)
TTL_CASES = {
    "no cache: every probe reads the table now": (
        LookupCache(),
        [(0, None, "a", 7), (500, BEA, "b", 7), (2500, None, "c", 7)],
        [[(I, "a", "Ann")], [(I, "b", "Bea")], [(I, "c", "Bea")]]),
    "expire after write 2 s: the update is seen once the entry expired": (
        LookupCache(max_rows=100, expire_after_write_ms=2000),
        [(0, None, "a", 7), (500, BEA, "b", 7), (1999, None, "c", 7), (2000, None, "d", 7)],
        [[(I, "a", "Ann")], [(I, "b", "Ann")], [(I, "c", "Ann")], [(I, "d", "Bea")]]),
    "expire after access 1 s: kept while read more often than that": (
        LookupCache(expire_after_access_ms=1000),
        [(0, None, "a", 7), (500, BEA, "b", 7), (1400, None, "c", 7), (2500, None, "d", 7)],
        [[(I, "a", "Ann")], [(I, "b", "Ann")], [(I, "c", "Ann")], [(I, "d", "Bea")]]),
}


@pytest.mark.parametrize("name", TTL_CASES)
def test_what_a_probe_joins_as_the_table_changes(name):
    cache, steps, expected = TTL_CASES[name]
    table, clock = InMemoryLookupSource(("id",), [ANN, CAL]), Clock()
    processor = join(table, cache=cache, clock=clock)
    for (at, change, order_id, customer), want in zip(steps, expected):
        clock.now = at
        if change is not None:
            table.put(change, "id")
        assert joined(processor.process(order(order_id, customer, at))) == want, (name, order_id)


@pytest.mark.parametrize("join_type, expected", [
    (JoinType.INNER, [[(I, "a", "Ann")], [], []]),
    (JoinType.LEFT, [[(I, "a", "Ann")], [(I, "b", None)], [(I, "c", None)]]),
])
def test_a_missing_row_and_a_null_key(join_type, expected):
    processor = join(InMemoryLookupSource(("id",), [ANN]), join_type)
    got = [joined(processor.process(order(o, c))) for o, c in (("a", 7), ("b", 99), ("c", None))]
    assert got == expected
    assert processor.metrics["null_key"] == 1


def test_every_row_of_a_key_joins_and_the_residual_filters_them():
    table = InMemoryLookupSource(("id",), [ANN, {"id": 7, "name": "Ada"}])
    assert joined(join(table).process(order("a", 7))) == [(I, "a", "Ann"), (I, "a", "Ada")]
    only_ada = join(table, JoinType.LEFT, residual=lambda left, right: right["c"]["name"] == "Ada")
    assert joined(only_ada.process(order("b", 7))) == [(I, "b", "Ada")]
    nobody = join(table, JoinType.LEFT, residual=lambda left, right: False)
    assert joined(nobody.process(order("c", 7))) == [(I, "c", None)]


@pytest.mark.parametrize("cache_missing, reads", [(True, 1), (False, 3)])
def test_a_missing_key_is_cached_unless_told_not_to(cache_missing, reads):
    table = InMemoryLookupSource(("id",), [ANN])
    processor = join(table, cache=LookupCache(max_rows=10, expire_after_write_ms=60_000, cache_missing_key=cache_missing))
    for name in "abc":
        processor.process(order(name, 99))
    assert table.lookups == reads


def test_the_cache_holds_at_most_max_rows_keys_least_recently_used_first_out():
    table = InMemoryLookupSource(("id",), [ANN, CAL, {"id": 9, "name": "Dan"}])
    processor = join(table, cache=LookupCache(max_rows=2, expire_after_write_ms=60_000))
    for customer in (7, 8, 7, 9, 7, 8):  # 9 evicts 8 (7 was read since); 8 is read again
        processor.process(order("x", customer))
    assert table.lookups == 4


class Flaky(InMemoryLookupSource):
    def __init__(self, failures: int) -> None:
        super().__init__(("id",), [ANN])
        self.failures, self.closed = failures, 0

    def lookup(self, key):
        if self.failures:
            self.failures -= 1
            raise ConnectionError("connection lost")
        return super().lookup(key)

    def close(self) -> None:
        self.closed += 1


def test_a_lost_connection_is_reopened_up_to_max_retries():
    table = Flaky(failures=2)
    processor = LookupJoin(LookupJoinConfig(lambda: table, "c", max_retries=2))
    assert joined(processor.process(order("a", 7))) == [(I, "a", "Ann")] and table.closed == 2
    failing = LookupJoin(LookupJoinConfig(lambda: Flaky(failures=5), "c", max_retries=1))
    with pytest.raises(ConnectionError, match="lookup of c failed 2 times"):
        failing.process(order("b", 7))


def test_a_tasks_pickled_state_has_no_connection_and_an_empty_cache():
    processor = join(InMemoryLookupSource(("id",), [ANN]), cache=LookupCache(max_rows=5))
    processor.process(order("a", 7))
    processor.config = LookupJoinConfig(_table_factory, "c", cache=LookupCache(max_rows=5))  # picklable connect
    restored = pickle.loads(pickle.dumps(processor))
    assert restored._source is None and not restored._cache.entries


def _table_factory():
    return InMemoryLookupSource(("id",), [ANN])
