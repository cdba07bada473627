"""Delta output through delta-rs: append, MERGE with tombstones, exactly-once replays, backfills.

Batches are Spark DataFrames, as foreachBatch hands them over; tables are read back through
deltalake (never spark.read.parquet on a Delta folder).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.delta.tables import DeltaSink, read_delta, read_delta_arrow, replace_range

pytestmark = pytest.mark.integration

ROW_SCHEMA = "id string, amount int, __tombstone boolean"


@dataclass(frozen=True)
class Case:
    inputs: list  # [(batch_id, [(id, amount, tombstone), ...]), ...] in arrival order
    expected: object


def rows_of(path) -> list[tuple]:
    table = read_delta_arrow(str(path)).sort_by("id")
    return [(r["id"], r["amount"]) for r in table.to_pylist()]


MERGE_CASES = [
    # b0: a=1, b=2 inserted | b1: a updated to 5, b deleted, c inserted
    Case([(0, [("a", 1, False), ("b", 2, False)]),
          (1, [("a", 5, False), ("b", None, True), ("c", 3, False)])],
         [("a", 5), ("c", 3)]),
    # within one batch the last change per key wins: a upserted then deleted, b deleted then re-upserted
    Case([(0, [("a", 1, False), ("b", 2, False)]),
          (1, [("a", 7, False), ("a", None, True), ("b", None, True), ("b", 9, False)])],
         [("b", 9)]),
    # a tombstone for a key never seen, even in the table's first batch, is a no-op
    Case([(0, [("x", None, True), ("a", 1, False)]), (1, [("y", None, True)])],
         [("a", 1)]),
    # replay of batch 1 after a crash (same id, same rows): skipped, not applied twice
    Case([(0, [("a", 1, False)]), (1, [("a", None, True)]), (1, [("a", None, True)]), (2, [("b", 2, False)])],
         [("b", 2)]),
]


@pytest.mark.parametrize("case", MERGE_CASES, ids=range(len(MERGE_CASES)))
def test_merge_upserts_and_deletes_on_tombstones(spark, tmp_delta_root, case: Case, request) -> None:
    path = tmp_delta_root / f"merge_{request.node.callspec.id}"
    sink = DeltaSink(str(path), mode="merge", key_columns=["id"], app_id="orders_table")
    for batch_id, rows in case.inputs:
        sink.write_batch(spark.createDataFrame(rows, ROW_SCHEMA), batch_id)
    assert rows_of(path) == case.expected
    assert "__tombstone" not in read_delta_arrow(str(path)).column_names


def test_append_replay_of_a_batch_id_is_skipped(spark, tmp_delta_root) -> None:
    path = str(tmp_delta_root / "append_replay")
    sink = DeltaSink(path, mode="append", app_id="clicks_stream")
    batch0 = spark.createDataFrame([("a", 1), ("b", 2)], "id string, amount int")
    batch1 = spark.createDataFrame([("a", 3)], "id string, amount int")

    assert sink.write_batch(batch0, 0) == 0
    assert sink.write_batch(batch0, 0) is None  # replayed after a crash: no new version
    assert sink.write_batch(batch1, 1) == 1
    assert sink.write_batch(batch0, 0) is None  # an older batch id is skipped too
    assert sink.committed_batch() == 1
    assert sorted(rows_of(path)) == [("a", 1), ("a", 3), ("b", 2)]
    # app ids are independent: another query appending to the same table starts at its own batch 0
    assert DeltaSink(path, app_id="other_query").write_batch(batch1, 0) == 2
    assert read_delta(spark, path).count() == 4


def test_replace_range_swaps_one_time_range_in_one_commit(spark, tmp_delta_root) -> None:
    path = str(tmp_delta_root / "backfill")
    initial = spark.createDataFrame(
        [("early", "1970-01-01 00:00:00"), ("old1", "1970-01-01 00:00:01"), ("old2", "1970-01-01 00:00:02"),
         ("late", "1970-01-01 00:00:03")], "id string, ts string").selectExpr("id", "CAST(ts AS TIMESTAMP) AS ts")
    assert DeltaSink(path, app_id="stream").write_batch(initial, 0) == 0

    backfill = spark.createDataFrame([("new", "1970-01-01 00:00:01.500")], "id string, ts string") \
        .selectExpr("id", "CAST(ts AS TIMESTAMP) AS ts")
    version = replace_range(path, backfill, "ts", 1000, 3000)  # [00:00:01, 00:00:03)

    assert version == 1  # one transaction: readers never see the range empty
    assert sorted(r["id"] for r in read_delta_arrow(path).to_pylist()) == ["early", "late", "new"]
    assert read_delta(spark, path).dtypes == [("id", "string"), ("ts", "timestamp")]


def test_replace_range_rejects_rows_outside_the_range(spark, tmp_delta_root) -> None:
    path = str(tmp_delta_root / "backfill_outside")
    replace_range(path, spark.createDataFrame([(1, "a")], "t long, id string"), "t", 0, 10)
    with pytest.raises(Exception, match="failed validation"):
        replace_range(path, spark.createDataFrame([(50, "b")], "t long, id string"), "t", 0, 10)
    assert [r["id"] for r in read_delta_arrow(path).to_pylist()] == ["a"]
