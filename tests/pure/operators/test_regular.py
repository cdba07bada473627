"""Flink regular (unbounded) join: conformance, outer-row retraction timelines, upsert inputs,
event-time state TTL, and the changelog against a batch join of the final inputs."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.pure.operators.conformance_inputs import column, run_and_compare
from streamjoin.operators.base import END_OF_TIME, Record, RowKind, Side
from streamjoin.operators.regular import InputKind, RegularJoin, RegularJoinConfig
from streamjoin.operators.base import JoinType

L, R = Side.LEFT, Side.RIGHT
APPEND, UPSERT = InputKind.APPEND, InputKind.UPSERT


def test_conformance_inner():
    # Orders (append, keyed by productId) JOIN Product (upsert, keyed by id); SELECT *.
    run_and_compare(
        "flink.regular.inner",
        RegularJoin(RegularJoinConfig(JoinType.INNER, APPEND, UPSERT)),
        {"Orders": L, "Product": R},
        lambda o, p: {"orderId": o["orderId"], "productId": o["productId"], "id": p["id"],
                      "name": p["name"]},
        join_column={"Orders": "productId"})


def rec(side, ts, v, key="p1"):
    return Record(side, key, None if v is None else {"v": v}, ts)


def described(changes):
    return [(c.kind.value, column(c.left, "v"), column(c.right, "v"), c.ts) for c in changes]


CASES = [
    # The class docstring's timeline: LEFT JOIN, left append, right upsert (one key).
    ("left_outer_retractions", RegularJoinConfig(JoinType.LEFT, APPEND, UPSERT),
     [rec(L, 1, "o1"), rec(R, 2, "scooter"), rec(L, 3, "o2"), rec(R, 4, "e-scooter"),
      rec(R, 5, None)],
     [[("+I", "o1", None, 1)],
      [("-D", "o1", None, 1), ("+I", "o1", "scooter", 2)],
      [("+I", "o2", "scooter", 3)],
      [("-U", "o1", "scooter", 2), ("+U", "o1", "e-scooter", 4), ("-U", "o2", "scooter", 3),
       ("+U", "o2", "e-scooter", 4)],
      [("-D", "o1", "e-scooter", 4), ("-D", "o2", "e-scooter", 4), ("+I", "o1", None, 1),
       ("+I", "o2", None, 3)]]),
    # FULL, both append: a right row first is padded, retracted when the left row arrives;
    # a second left row joins without touching the (already matched) right row.
    ("full_outer_both_sides", RegularJoinConfig(JoinType.FULL),
     [rec(R, 1, "a"), rec(L, 2, "A"), rec(L, 3, "B")],
     [[("+I", None, "a", 1)], [("-D", None, "a", 1), ("+I", "A", "a", 2)],
      [("+I", "B", "a", 3)]]),
    # INNER, both append: every pair, past and future; other keys never join.
    ("inner_every_pair", RegularJoinConfig(),
     [rec(L, 1, "A"), rec(L, 2, "B"), rec(R, 3, "a"), rec(R, 4, "x", key="p2")],
     [[], [], [("+I", "A", "a", 3), ("+I", "B", "a", 3)], []]),
    # Upsert left deleted: RIGHT JOIN re-pads the right row it was joined with.
    ("right_join_upsert_delete", RegularJoinConfig(JoinType.RIGHT, UPSERT, APPEND),
     [rec(R, 1, "a"), rec(L, 2, "A"), rec(L, 3, None)],
     [[("+I", None, "a", 1)], [("-D", None, "a", 1), ("+I", "A", "a", 2)],
      [("-D", "A", "a", 2), ("+I", None, "a", 1)]]),
    # Residual: ON l.k = r.k AND l.v < r.v (strings): "B" < "a" holds, "b" < "a" does not.
    ("residual", RegularJoinConfig(JoinType.LEFT, residual=lambda l, r: l["v"] < r["v"]),
     [rec(R, 1, "a"), rec(L, 2, "B"), rec(L, 3, "b")],
     [[], [("+I", "B", "a", 2)], [("+I", "b", None, 3)]]),
    # FLINK-40681: both inputs upsert, LEFT JOIN. The only match is replaced by an update (one
    # result row changes: -U/+U) and then deleted: the left row is padded again.
    ("left_join_upsert_update_then_delete", RegularJoinConfig(JoinType.LEFT, UPSERT, UPSERT),
     [rec(L, 1, "a"), rec(R, 2, "x"), rec(R, 3, "y"), rec(R, 4, None)],
     [[("+I", "a", None, 1)], [("-D", "a", None, 1), ("+I", "a", "x", 2)],
      [("-U", "a", "x", 2), ("+U", "a", "y", 3)], [("-D", "a", "y", 3), ("+I", "a", None, 1)]]),
    # Upsert left row updated while unmatched: its padded row changes (-U/+U), INNER emits nothing.
    ("left_upsert_update_unmatched", RegularJoinConfig(JoinType.LEFT, UPSERT, APPEND),
     [rec(L, 1, "a"), rec(L, 2, "b")],
     [[("+I", "a", None, 1)], [("-U", "a", None, 1), ("+U", "b", None, 2)]]),
    # SEMI (IN / EXISTS): a left row once, when it has a match; later matches add nothing.
    #   L A@1 (no match yet) ; R a@2 -> +I [A] ; R b@3 -> nothing ; L B@4 -> +I [B]
    ("semi", RegularJoinConfig(JoinType.SEMI),
     [rec(L, 1, "A"), rec(R, 2, "a"), rec(R, 3, "b"), rec(L, 4, "B")],
     [[], [("+I", "A", None, 1)], [], [("+I", "B", None, 4)]]),
    # ANTI (NOT EXISTS): a left row while it has no match; the first match retracts it. A NULL
    # key matches nothing, so its row stays. Right upsert deleted: A is unmatched again.
    ("anti_upsert_right", RegularJoinConfig(JoinType.ANTI, APPEND, UPSERT),
     [rec(L, 1, "A"), rec(L, 2, "N", key=None), rec(R, 3, "a"), rec(R, 4, "b"), rec(R, 5, None)],
     [[("+I", "A", None, 1)], [("+I", "N", None, 2)], [("-D", "A", None, 1)], [], [("+I", "A", None, 1)]]),
    # SEMI with a residual: only pairs that pass it count as matches.
    ("semi_residual", RegularJoinConfig(JoinType.SEMI, residual=lambda l, r: l["v"] < r["v"]),
     [rec(R, 1, "b"), rec(L, 2, "c"), rec(L, 3, "a")],
     [[], [], [("+I", "a", None, 3)]]),
    # Null key: an outer row stays padded forever; a null value on an append input is ignored.
    ("null_key_and_value", RegularJoinConfig(JoinType.LEFT),
     [rec(L, 1, "A", key=None), rec(R, 2, "a", key=None), rec(L, 3, None)],
     [[("+I", "A", None, 1)], [], []]),
]


@pytest.mark.parametrize("name, config, inputs, expected", CASES, ids=[c[0] for c in CASES])
def test_timelines(name, config, inputs, expected):
    join = RegularJoin(config)
    assert [described(join.process(record)) for record in inputs] == expected


def test_null_inputs_are_counted():
    join = RegularJoin(RegularJoinConfig(JoinType.LEFT))
    join.process_all([rec(L, 1, "A", key=None), rec(R, 2, "a", key=None), rec(L, 3, None)])
    assert (join.metrics["null_key"], join.metrics["null_value"]) == (2, 1)


def test_event_time_state_ttl():
    # TTL 10 s of stream time since the write:
    #   L A@0 (kept through 10) ; R a@10 -> [A,a] (a kept through 20) ; advance_to(11) -> A expires
    #   R b@12 -> nothing (A is gone) ; advance_to(END) -> a and b expire
    join = RegularJoin(RegularJoinConfig(state_ttl_ms=10_000))
    assert described(join.process(rec(L, 0, "A"))) == []
    assert described(join.process(rec(R, 10_000, "a"))) == [("+I", "A", "a", 10_000)]
    assert join.advance_to(11_000) == []
    assert join.metrics["expired"] == 1
    assert described(join.process(rec(R, 12_000, "b"))) == []
    join.advance_to(END_OF_TIME)
    assert join.metrics["expired"] == 3
    assert len(join.state[L]) == len(join.state[R]) == 0


def test_ttl_must_be_positive():
    with pytest.raises(ValueError, match="state_ttl_ms"):
        RegularJoinConfig(state_ttl_ms=0)


@pytest.mark.parametrize("join_type", [JoinType.INNER, JoinType.LEFT, JoinType.RIGHT, JoinType.FULL,
                                       JoinType.SEMI, JoinType.ANTI], ids=lambda j: j.value)
def test_changelog_sums_to_batch_join_of_final_inputs(join_type):
    # Left upsert (5 keys), right append (3 join keys): 300 random changes. The multiset of rows
    # the changelog leaves (+I minus -D, never negative) equals the batch join of the final inputs.
    rng = random.Random(3)
    left, right = {}, []
    join = RegularJoin(RegularJoinConfig(join_type, UPSERT, APPEND))
    result = Counter()
    for ts in range(300):
        key = rng.randrange(3)
        if rng.random() < 0.5:
            value = None if rng.random() < 0.3 else {"v": ts}
            left.pop(key, None) if value is None else left.__setitem__(key, value)
            record = Record(L, key, value, ts)
        else:
            right.append((key, {"v": ts}))
            record = Record(R, key, {"v": ts}, ts)
        for change in join.process(record):
            row = (change.key, column(change.left, "v"), column(change.right, "v"))
            result[row] += -1 if change.kind.is_retraction else 1
            assert result[row] >= 0
    batch = Counter()
    for key, row in left.items():
        matches = [r for k, r in right if k == key]
        if join_type.filters_left:
            batch[(key, row["v"], None)] += bool(matches) == (join_type is JoinType.SEMI)
            continue
        batch.update((key, row["v"], r["v"]) for r in matches)
        if not matches and join_type.preserves(L):
            batch[(key, row["v"], None)] += 1
    for key, row in right:
        if key not in left and join_type.preserves(R) and not join_type.filters_left:
            batch[(key, None, row["v"])] += 1
    assert +result == batch


def test_changelog_input_retractions_withdraw_their_row():
    # The left input is an upstream result: +I A, +I A (twice), -D A withdraws one of them.
    #   L A@1 ; L A@2 ; R a@3 -> two pairs ; L -D A@4 -> one pair retracted ; -D B: no such row
    join = RegularJoin(RegularJoinConfig(JoinType.INNER))
    out = join.process_all([rec(L, 1, "A"), rec(L, 2, "A"), rec(R, 3, "a")])
    assert described(out) == [("+I", "A", "a", 3), ("+I", "A", "a", 3)]
    withdrawn = join.process(Record(L, "p1", {"v": "A"}, 4, kind=RowKind.DELETE))
    assert described(withdrawn) == [("-D", "A", "a", 3)]
    assert join.process(Record(L, "p1", {"v": "B"}, 5, kind=RowKind.DELETE)) == []
    assert join.metrics["retraction_without_row"] == 1
