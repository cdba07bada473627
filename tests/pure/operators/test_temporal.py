"""Flink temporal joins: event time (versioned table, watermark-driven), processing time, and the
temporal table function join; Flink's doc examples (conformance) plus watermark/cleanup timelines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

import pytest

from tests.pure.operators.conformance_inputs import case_records, column, conformance_case, run_and_compare
from streamjoin.operators.base import END_OF_TIME, Record, RowKind, Side
from streamjoin.operators.base import JoinType
from streamjoin.operators.temporal import (
    EventTimeTemporalJoin,
    ProcessingTimeTemporalJoin,
    TemporalJoinConfig,
)

L, R = Side.LEFT, Side.RIGHT


def sql_timestamp(ts: int) -> str:
    return datetime.fromtimestamp(ts / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def with_update_time(records: list[Record]) -> list[Record]:
    """update_time is a METADATA ... VIRTUAL column: decoding fills it from the record ts."""
    return [Record(r.side, r.key, {**r.value, "update_time": sql_timestamp(r.ts)}, r.ts, r.seq)
            if r.side is R and r.value is not None else r for r in records]


def product_projection(o, p):
    return {"order_id": column(o, "order_id"), "order_time": column(o, "order_time"),
            "product_name": column(p, "product_name"), "product_time": column(p, "update_time"),
            "price": column(p, "product_price")}


@pytest.mark.parametrize("case_id", ["flink.temporal.event_time.product_changelog",
                                     "flink.temporal.event_time.versions_at_10_and_13"])
def test_conformance_event_time(case_id):
    sides, join_column = {"orders": L, "product_changelog": R}, {"orders": "product_id"}
    records = with_update_time(case_records(conformance_case(case_id), sides, join_column))
    join = EventTimeTemporalJoin(TemporalJoinConfig(JoinType.LEFT))
    run_and_compare(case_id, join, sides, product_projection, records=records)


def running_sum(term):
    """SUM(term) over the join output: each change updates the one aggregate row."""
    total = [0]

    def project(left, right):
        total[0] += term(left, right)
        return {"amount": total[0]}
    return project


TEMPORAL_FUNCTION = {"Orders": L, "RatesHistory": R}
CONFORMANCE = [
    # (case, operator, sides, join columns, projection)
    ("flink.temporal.processing_time.latest_rates", ProcessingTimeTemporalJoin,
     {"Orders": L, "LatestRates": R}, {"Orders": "currency"},
     lambda o, r: {"amount": o["amount"], "currency": o["currency"], "rate": r["rate"],
                   "yen_amount": o["amount"] * r["rate"]}),
    ("flink.temporal_function.rates_per_row", EventTimeTemporalJoin, TEMPORAL_FUNCTION,
     {"Orders": "currency", "RatesHistory": "currency"},
     lambda o, r: {"amount": o["amount"] * r["rate"]}),
    ("flink.temporal_function.rates_sum", EventTimeTemporalJoin, TEMPORAL_FUNCTION,
     {"Orders": "currency", "RatesHistory": "currency"},
     running_sum(lambda o, r: o["amount"] * r["rate"])),
    ("flink.temporal_function.usage_proctime_sum", ProcessingTimeTemporalJoin, TEMPORAL_FUNCTION,
     {"Orders": "o_currency", "RatesHistory": "r_currency"},
     running_sum(lambda o, r: o["o_amount"] * r["r_rate"])),
]


@pytest.mark.parametrize("case_id, operator, sides, join_column, project", CONFORMANCE,
                         ids=[c[0] for c in CONFORMANCE])
def test_conformance(case_id, operator, sides, join_column, project):
    run_and_compare(case_id, operator(TemporalJoinConfig(JoinType.INNER)), sides, project,
                    join_column=join_column)


def left(key, ts, name):
    return Record(L, key, {"o": name}, ts)


def right(key, ts, price):
    return Record(R, key, None if price is None else {"price": price}, ts)


END = "end"  # advance_to(END_OF_TIME)


@dataclass
class Case:
    name: str
    config: TemporalJoinConfig
    inputs: list  # Records or END
    expected: list[list[tuple]]  # per input: emitted (order, price, ts)
    metrics: dict = field(default_factory=dict)


CASES = [
    # Probe rows wait for W = min(max left ts, max right ts) to pass their time.
    #   R k 10@10 (W -inf) ; L o1@15 (W 10) ; L o2@12 (W 10) ; R k 14@14 (W 14: o2 -> 10)
    #   R k 20@20 (W 15: o1 waits, 15 !< 15) ; end -> o1 joins the version at 14
    Case("watermark_drives_emission", TemporalJoinConfig(JoinType.LEFT),
         [right("k", 10, 10), left("k", 15, "o1"), left("k", 12, "o2"), right("k", 14, 14),
          right("k", 20, 20), END],
         [[], [], [], [("o2", 10, 12)], [], [("o1", 14, 15)]]),
    # A version at exactly the probe's time is valid (update_time <= order_time).
    Case("version_at_probe_time_counts", TemporalJoinConfig(),
         [right("k", 10, 1), right("k", 20, 2), left("k", 20, "o"), END],
         [[], [], [], [("o", 2, 20)]]),
    # Right delay 5: the right watermark trails by 5 s, so a version arriving 4 s out of order
    # still counts: R 30@30 ; L o@27 ; R 25@25 (not late, W = 25) ; L x@40 (W 25) ; end -> o: 25
    Case("right_delay_admits_out_of_order_versions", TemporalJoinConfig(right_delay=5),
         [right("k", 30, 30), left("k", 27, "o"), right("k", 25, 25), left("k", 40, "x"), END],
         [[], [], [], [], [("o", 25, 27), ("x", 30, 40)]]),
    # A deletion is a version: the probe after it finds nothing (LEFT pads, INNER drops).
    #   R 5@1 ; R deleted@10 ; L before@5 (W 5) ; L after@12 (W 10: before -> 5) ; end -> after
    Case("deletion_is_a_version_left", TemporalJoinConfig(JoinType.LEFT),
         [right("k", 1, 5), right("k", 10, None), left("k", 5, "before"), left("k", 12, "after"), END],
         [[], [], [], [("before", 5, 5)], [("after", None, 12)]]),
    Case("deletion_is_a_version_inner", TemporalJoinConfig(JoinType.INNER),
         [right("k", 1, 5), right("k", 10, None), left("k", 5, "before"), left("k", 12, "after"), END],
         [[], [], [], [("before", 5, 5)], []]),
    # Residual checks the version the time selects; an older passing version does not replace it.
    #   ON ... AND p.price < 10: at 12 the version is 15 -> no match (LEFT: null)
    Case("residual_on_the_selected_version", TemporalJoinConfig(
        JoinType.LEFT, residual=lambda o, p: p["price"] < 10),
         [right("k", 1, 5), right("k", 10, 15), left("k", 12, "o"), END],
         [[], [], [], [("o", None, 12)]]),
    # Late probe (ts < W) is counted and dropped: R 50@50 ; L a@60 (W 50) ; L late@40
    Case("late_probe_counted", TemporalJoinConfig(JoinType.LEFT),
         [right("k", 50, 50), left("k", 60, "a"), left("k", 40, "late"), END],
         [[], [], [], [("a", 50, 60)]], metrics={"late": 1}),
    # An idle right input holds the watermark back (Flink): nothing until end of input.
    Case("idle_right_input_holds_emission", TemporalJoinConfig(JoinType.LEFT),
         [left("k", 1, "a"), left("k", 100, "b"), END],
         [[], [], [("a", None, 1), ("b", None, 100)]]),
    # Null keys: INNER drops the probe, LEFT pads it (NULL matches nothing); both counted.
    Case("null_key_probe_left", TemporalJoinConfig(JoinType.LEFT),
         [right(None, 1, 1), left(None, 2, "n"), END], [[], [], [("n", None, 2)]],
         metrics={"null_key": 2}),
    Case("null_key_probe_inner", TemporalJoinConfig(JoinType.INNER),
         [left(None, 2, "n"), END], [[], []], metrics={"null_key": 1}),
]


def described(changes):
    return [(column(c.left, "o"), column(c.right, "price"), c.ts) for c in changes]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_event_time_timelines(case):
    join = EventTimeTemporalJoin(case.config)
    steps = [join.advance_to(END_OF_TIME) if item == END else join.process(item)
             for item in case.inputs]
    assert [described(step) for step in steps] == case.expected
    assert {k: join.metrics[k] for k in case.metrics} == case.metrics


def test_versions_before_the_watermark_are_cleaned_up():
    # 100 versions of k at 0..99 s while probes keep the watermark moving: only versions that a
    # probe at or after the watermark can still select stay (the latest before W and newer ones).
    join = EventTimeTemporalJoin(TemporalJoinConfig())
    for second in range(100):
        join.process(right("k", second * 1000, second))
        join.process(left("k", second * 1000, f"o{second}"))
    assert len(join.history.get("k")) <= 3
    # A deletion behind the watermark drops the key's history altogether.
    join.process(right("gone", 200_000, 1))
    join.process(right("gone", 201_000, None))
    join.process(left("k", 300_000, "x"))
    join.process(right("k", 300_000, 7))
    join.process(right("gone", 400_000, None))
    assert [version[0] for version in join.history.get("gone")] == [400_000]


def test_processing_time_uses_the_latest_version_at_arrival():
    # Flink's LatestRates: Euro 114 -> order joins 114; Euro 116 -> next order joins 116;
    # Euro deleted -> INNER drops the third order. Later changes never touch earlier output.
    join = ProcessingTimeTemporalJoin(TemporalJoinConfig())
    changes = join.process_all([
        right("Euro", 1, 114), left("Euro", 2, "a"), right("Euro", 3, 116), left("Euro", 4, "b"),
        right("Euro", 5, None), left("Euro", 6, "c")])
    assert described(changes) == [("a", 114, 2), ("b", 116, 4)]


def test_only_inner_and_left():
    with pytest.raises(ValueError, match="INNER, LEFT"):
        TemporalJoinConfig(JoinType.FULL)


def test_changelog_sides():
    # Right: a changelog (a normalized upsert table, a deduplication): +I 10@1, -U 10@1 (ignored:
    # its successor replaces it), +U 12@3, -D 12@5 (a deletion version). Left: a changelog probe
    # whose retraction joins like a row, keeping its kind.
    join = EventTimeTemporalJoin(TemporalJoinConfig(JoinType.LEFT))
    records = [Record(R, "k", {"v": 10}, 1), Record(R, "k", {"v": 10}, 1, kind=RowKind.UPDATE_BEFORE),
               Record(R, "k", {"v": 12}, 3, kind=RowKind.UPDATE_AFTER), Record(R, "k", {"v": 12}, 5, kind=RowKind.DELETE),
               Record(L, "k", {"o": "a"}, 2), Record(L, "k", {"o": "b"}, 4), Record(L, "k", {"o": "c"}, 6),
               Record(L, "k", {"o": "b"}, 4, kind=RowKind.DELETE)]
    out = join.process_all(records) + join.advance_to(END_OF_TIME)
    assert [(c.kind.value, c.left["o"], column(c.right, "v"), c.ts) for c in out] == [
        ("+I", "a", 10, 2), ("+I", "b", 12, 4), ("-D", "b", 12, 4), ("+I", "c", None, 6)]
