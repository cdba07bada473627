"""The Delta output's rows are checked where the results are made (`delta.rows.TableRows`, in
the task): a result that does not fit the table comes back rejected by position (the task keeps
it out of Kafka too, `task_sink`), the others come back as the table's rows."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import pyarrow as pa
import pytest

from streamjoin.delta.rows import TableRows, declared_schema
from streamjoin.runner.cases import Case as SqlCase
from streamjoin.runner.planned import plan_case

SETUP = ["CREATE STREAM views (id STRING KEY, page STRING, n BIGINT) "
         "WITH (kafka_topic='views', value_format='JSON', partitions=1);"]
SQL = "CREATE STREAM out AS SELECT id, page, n FROM views EMIT CHANGES;"


@dataclass(frozen=True)
class Case:
    name: str
    existing: pa.Schema | None  # the schema of a table an earlier version of the query left behind
    batch: tuple[tuple[str, dict], ...]  # sink records: (key, value)
    rejected: dict[int, str]  # record index -> a fragment of the reason
    written: list[str]  # PAGE of every row that fits


CASES = [
    Case("declared types", None,
         (("a", {"PAGE": "p1", "N": 1}), ("b", {"PAGE": "p2", "N": 10**20}), ("c", {"PAGE": "p3", "N": 3})),
         {1: "cannot be read back"}, ["p1", "p3"]),
    # The table holds N as int32: 3e9 fits BIGINT (so it encodes) but not the table's column.
    Case("the existing table's schema wins",
         pa.schema([("ID", pa.string()), ("PAGE", pa.string()), ("N", pa.int32()), ("__ts", pa.int64()),
                    ("__tombstone", pa.bool_())]),
         (("a", {"PAGE": "p1", "N": 1}), ("b", {"PAGE": "p2", "N": 3_000_000_000})),
         {1: "does not fit the Delta table"}, ["p1"]),
]


def planned():
    (query,) = plan_case(SqlCase.from_json({"id": "out", "dialect": "ksqldb", "setup": SETUP, "sql": SQL,
                                             "inputs": [], "expected": []}), "").queries
    return query


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rows_that_do_not_fit_are_rejected_and_the_rest_converted(case):
    query = planned()
    rows = TableRows(query.sink_serde, case.existing or declared_schema(query.sink_serde), "/tables/out")
    records = [(k.encode(), json.dumps(v).encode(), n) for n, (k, v) in enumerate(case.batch)]

    table, rejected = rows.convert(records, task=2)

    assert [index for index, _ in rejected] == sorted(case.rejected)
    for index, reason in rejected:
        assert case.rejected[index] in reason and "/tables/out" in reason
    assert table.column("PAGE").to_pylist() == case.written
    assert table.schema == rows.row_schema
    kept = [n for n in range(len(case.batch)) if n not in case.rejected]
    assert table.column("__seq").to_pylist() == [(2 << 32) | n for n in kept]  # the task's order, per key


def test_a_column_of_type_any_takes_the_type_of_its_values_unified_over_the_tasks():
    import pyarrow as pa

    from streamjoin.delta.rows import schema_figure, unified_schema

    base = pa.schema([("ID", pa.string()), ("X", pa.null()), ("Y", pa.null())])
    tasks = [pa.schema([("ID", pa.string()), ("X", pa.int64()), ("Y", pa.null())]),  # Y: no value yet
             pa.schema([("ID", pa.string()), ("X", pa.float64()), ("Y", pa.null())])]
    assert unified_schema([schema_figure(s) for s in tasks], base) == pa.schema(
        [("ID", pa.string()), ("X", pa.float64()), ("Y", pa.string())])
    assert unified_schema([], base).field("X").type == pa.string()


def random_record(rng: random.Random, clean: bool) -> tuple:
    """(key, value, ts) of a sink record; unless `clean`, sometimes a tombstone, a value that does
    not read back or a number too large for BIGINT."""
    key = None if rng.random() < 0.1 else rng.choice(["a", "ü", 'q"uote']).encode()
    fields = {"PAGE": rng.choice([None, "p", "naïve ☃", "tab\t"]), "N": rng.choice([None, 0, -5, 2**40])}
    roll = rng.random()
    if not clean and roll < 0.05:
        return key, None, 7
    if not clean and roll < 0.1:
        fields["N"] = 10**20
    return key, json.dumps(fields).encode(), rng.randrange(10**12)


@pytest.mark.parametrize("seed", range(8))
def test_a_batch_built_a_column_at_a_time_is_the_batch_built_record_by_record(seed: int):
    """`convert` builds a batch whose records all decode a column at a time; the rows, their
    order and the rejections are what converting record by record gives (`_by_record`), on
    batches that all decode (even seeds) and on batches with some that do not (odd)."""
    rng = random.Random(seed)
    rows = TableRows(planned().sink_serde, declared_schema(planned().sink_serde), "/tables/out")
    records = [random_record(rng, clean=seed % 2 == 0) for _ in range(200)]

    table, rejected = rows.convert(records, task=3)

    expected, expected_rejected = rows._by_record(records, task=3)
    assert table.equals(expected) and rejected == expected_rejected
    assert (rows._by_column(records, 3) is not None) == (seed % 2 == 0)
    assert table.num_rows > 100
