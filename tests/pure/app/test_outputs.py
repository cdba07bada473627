"""The Delta output checks a batch before anything is written: a result that does not fit the
table comes back rejected by position (the driver keeps it out of Kafka too), the others are
written."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from streamjoin.app.outputs import DeltaOutput
from streamjoin.delta.tables import read_delta_arrow
from streamjoin.runner.cases import Case as SqlCase
from streamjoin.runner.planned import plan_case

SETUP = ["CREATE STREAM views (id STRING KEY, page STRING, n BIGINT) "
         "WITH (kafka_topic='views', value_format='JSON', partitions=1);"]
SQL = "CREATE STREAM out AS SELECT id, page, n FROM views EMIT CHANGES;"


@dataclass(frozen=True)
class Case:
    name: str
    existing: pa.Table | None  # a table an earlier version of the query left behind
    batch: tuple[tuple[str, dict], ...]  # sink records: (key, value)
    rejected: dict[int, str]  # record index -> a fragment of the reason
    written: list[str]  # PAGE of every row in the table afterwards


CASES = [
    Case("declared types", None,
         (("a", {"PAGE": "p1", "N": 1}), ("b", {"PAGE": "p2", "N": 10**20}), ("c", {"PAGE": "p3", "N": 3})),
         {1: "cannot be read back"}, ["p1", "p3"]),
    # The table holds N as int32: 3e9 fits BIGINT (so it encodes) but not the table's column.
    Case("the existing table's schema wins", pa.table({"PAGE": ["p0"], "N": pa.array([0], pa.int32())}),
         (("a", {"PAGE": "p1", "N": 1}), ("b", {"PAGE": "p2", "N": 3_000_000_000})),
         {1: "does not fit the Delta table"}, ["p0", "p1"]),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rows_that_do_not_fit_are_rejected_and_the_rest_written(case, tmp_path):
    (query,) = plan_case(SqlCase.from_json({"id": "out", "dialect": "ksqldb", "setup": SETUP, "sql": SQL,
                                             "inputs": [], "expected": []}), "").queries
    path = str(tmp_path / "out")
    if case.existing is not None:
        write_deltalake(path, case.existing.append_column("__ts", pa.array([0], pa.int64()))
                        .append_column("__tombstone", pa.array([False])))
    output = DeltaOutput(query, path)
    records = pa.table({"key": [k.encode() for k, _ in case.batch],
                        "value": [json.dumps(v).encode() for _, v in case.batch], "ts": list(range(len(case.batch)))})

    rows, rejected = output.prepare(records)
    output.write(rows, 0)

    assert [index for index, _ in rejected] == sorted(case.rejected)
    for index, reason in rejected:
        assert case.rejected[index] in reason
    assert sorted(read_delta_arrow(path).column("PAGE").to_pylist()) == case.written
