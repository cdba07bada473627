"""Delta output through delta-spark (`spark.delta_writes`): append, MERGE with tombstones,
exactly-once replays of a batch id, backfills that replace a time range in one commit.

Batches are Spark DataFrames, as the batch writer hands them over (the rows carry `__seq`, their
place in the batch); tables are read back through deltalake (a check with no Spark needed).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pyspark.sql import functions as F

from streamjoin.delta.tables import read_delta, read_delta_arrow
from streamjoin.spark import delta_writes

pytestmark = pytest.mark.integration

ROW_SCHEMA = "id string, amount int, __tombstone boolean"


@dataclass(frozen=True)
class Case:
    inputs: list  # [(batch_id, [(id, amount, tombstone), ...]), ...] in arrival order
    expected: object


def rows_of(path) -> list[tuple]:
    table = read_delta_arrow(str(path)).sort_by("id")
    return [(r["id"], r["amount"]) for r in table.to_pylist()]


def batch(spark, rows: list[tuple], schema: str = ROW_SCHEMA):
    """`rows` with their place in the batch as `__seq`, over several partitions."""
    return spark.createDataFrame([(*row, n) for n, row in enumerate(rows)], f"{schema}, __seq long").repartition(3)


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
    # a replayed MERGE that would change the table (an upsert on top of itself) is skipped too
    Case([(0, [("a", 1, False)]), (1, [("a", 2, False)]), (0, [("a", 1, False)])],
         [("a", 2)]),
]


@pytest.mark.parametrize("case", MERGE_CASES, ids=range(len(MERGE_CASES)))
def test_merge_upserts_and_deletes_on_tombstones(spark, tmp_delta_root, case: Case, request) -> None:
    path = str(tmp_delta_root / f"merge_{request.node.callspec.id}")
    for batch_id, rows in case.inputs:
        delta_writes.merge(batch(spark, rows), path, ["id"], "orders_table", batch_id)
    assert rows_of(path) == case.expected
    assert "__tombstone" not in read_delta_arrow(path).column_names


def test_append_replay_of_a_batch_id_is_skipped(spark, tmp_delta_root) -> None:
    path = str(tmp_delta_root / "append_replay")
    batch0 = batch(spark, [("a", 1), ("b", 2)], "id string, amount int")
    batch1 = batch(spark, [("a", 3)], "id string, amount int")

    delta_writes.append(batch0, path, "clicks_stream", 0)
    delta_writes.append(batch0, path, "clicks_stream", 0)  # replayed after a crash: no new version
    assert delta_writes.version(spark, path) == 0
    delta_writes.append(batch1, path, "clicks_stream", 1)
    delta_writes.append(batch0, path, "clicks_stream", 0)  # an older batch id is skipped too
    assert delta_writes.version(spark, path) == 1
    assert sorted(rows_of(path)) == [("a", 1), ("a", 3), ("b", 2)]
    assert "__seq" not in read_delta_arrow(path).column_names
    # app ids are independent: another query appending to the same table starts at its own batch 0
    delta_writes.append(batch1, path, "other_query", 0)
    assert read_delta(spark, path).count() == 4


def test_replace_range_swaps_one_time_range_in_one_commit(spark, tmp_delta_root) -> None:
    path = str(tmp_delta_root / "backfill")
    schema = "id string, __ts long, __tombstone boolean"
    initial = [("early", 0, False), ("old1", 1000, False), ("old2", 2000, False), ("late", 3000, False)]
    delta_writes.append(batch(spark, initial, schema), path, "stream", 0)

    delta_writes.replace_range(batch(spark, [("new", 1500, False)], schema), path, "__ts", 1000, 3000)

    assert delta_writes.version(spark, path) == 1  # one transaction: readers never see the range empty
    assert sorted(r["id"] for r in read_delta_arrow(path).to_pylist()) == ["early", "late", "new"]
    delta_writes.delete_range(spark, path, "__ts", 0, 1000)  # a range with no rows any more
    assert sorted(r["id"] for r in read_delta_arrow(path).to_pylist()) == ["late", "new"]


def test_replace_range_rejects_rows_outside_the_range(spark, tmp_delta_root) -> None:
    path = str(tmp_delta_root / "backfill_outside")
    schema = "id string, __ts long, __tombstone boolean"
    delta_writes.replace_range(batch(spark, [("a", 1, False)], schema), path, "__ts", 0, 10)
    delta_writes.replace_range(batch(spark, [("b", 2, False)], schema), path, "__ts", 0, 10)
    with pytest.raises(Exception, match="DELTA_REPLACE_WHERE_MISMATCH|does not conform|replaceWhere"):
        delta_writes.replace_range(batch(spark, [("c", 50, False)], schema), path, "__ts", 0, 10)
    assert [r["id"] for r in read_delta_arrow(path).to_pylist()] == ["b"]


def test_rows_packed_by_tasks_are_unpacked_on_the_executors(spark) -> None:
    import pyarrow as pa

    from streamjoin.spark.packing import to_ipc

    schema = pa.schema([("id", pa.string()), ("big", pa.int64()), ("at", pa.timestamp("us", tz="UTC"))])
    blobs = [to_ipc(pa.table({"id": [f"r{t}-{n}" for n in range(3)], "big": [10**17] * 3, "at": [0, 1, 2]},
                             schema=schema)) for t in range(2)]
    packed = spark.createDataFrame([("table", b) for b in blobs] + [("metrics", None)], "channel string, value binary")
    rows = delta_writes.unpacked(packed, "table", schema)
    assert rows.count() == 6 and rows.agg(F.sum("big")).first()[0] == 6 * 10**17
    assert dict(rows.dtypes) == {"id": "string", "big": "bigint", "at": "timestamp"}
