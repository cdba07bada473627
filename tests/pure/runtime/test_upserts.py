"""The primary-key table-table fast path (`streamjoin.runtime.upserts`) against the reference path.

Each case is a query whose two table topics take the fast path, run on randomized changelogs of
both tables interleaved (in runs of one topic or mixed): upserts and tombstones of keys that
repeat, NULL keys, timestamps out of order and repeated, records that cannot be decoded, whose
fields are spelled in another case, carry headers, or whose results cannot be evaluated or
encoded. The fast path must give the same outputs per record (results, tombstones and dead
letters with their reasons), the same counters and stream time, and leave the same two tables.

    reference: runtime.process_record(row) for each row          (every stage, record by record)
    fast:      runtime.process_all(rows), runtime.process(row)    (runs of both topics at once)
"""

from __future__ import annotations

import dataclasses
import random

import pytest

from streamjoin.runtime.contract import InputRow
from streamjoin.runtime.stages import JoinStage
from streamjoin.runtime.upserts import TableTableUpserts
from tests.pure.runtime.test_lookup import KSQL_SOURCES, Case, runtimes, source
from tests.pure.runtime.test_within import both_sides, inputs

USERS = KSQL_SOURCES[1]
SCORES = source("scores", "table", ["id"], {"id": "STRING", "name": "STRING", "score": "BIGINT"})
KSQL_TABLES = (USERS, SCORES)
LENSES_TABLES = (source("customers", "table", ["_key"], {"_key": "INT", "id": "INT", "name": "STRING"}),
                 source("accounts", "table", ["_key"], {"_key": "INT", "balance": "INT", "owner": "STRING"}))

CASES = [
    # bench/table_joins.py's shape: every output column a plain column.
    Case("ksqlDB table-table INNER JOIN", "ksqldb",
         "CREATE TABLE out AS SELECT u.id AS id, u.name AS name, s.score AS score FROM users u "
         "JOIN scores s ON u.id = s.id EMIT CHANGES;", KSQL_TABLES, "users", plain=True),
    Case("ksqlDB table-table LEFT JOIN", "ksqldb",
         "CREATE TABLE out AS SELECT u.id AS id, s.name AS sname, u.score AS uscore, s.score AS sscore "
         "FROM users u LEFT JOIN scores s ON u.id = s.id EMIT CHANGES;", KSQL_TABLES, "users", plain=True),
    # WHERE after the join: a result it drops is not written (nor deleted); tombstones pass.
    Case("ksqlDB table-table FULL OUTER JOIN with WHERE", "ksqldb",
         "CREATE TABLE out AS SELECT ROWKEY AS k, u.name AS a, s.name AS b FROM users u "
         "FULL OUTER JOIN scores s ON u.id = s.id WHERE u.score IS NULL OR u.score < 50 EMIT CHANGES;",
         KSQL_TABLES, "users"),
    # `u.name + 1` fails to evaluate for a non-NULL name; the product overflows BIGINT when encoded.
    Case("ksqlDB table-table RIGHT JOIN, failing expressions", "ksqldb",
         "CREATE TABLE out AS SELECT s.id AS id, u.score * s.score * 1000000000000 AS big, "
         "CASE WHEN s.score > 50 THEN u.name + 1 ELSE 0 END AS odd FROM users u "
         "RIGHT JOIN scores s ON u.id = s.id EMIT CHANGES;", KSQL_TABLES, "users"),
    Case("Lenses table-table JOIN", "lenses",
         "WITH c AS (SELECT TABLE * FROM customers);\nWITH a AS (SELECT TABLE * FROM accounts);\n"
         "INSERT INTO result SELECT TABLE c.name, a.balance FROM c JOIN a ON c._key = a._key;",
         LENSES_TABLES, "customers", plain=True),
]


def updates(case: Case, runtime, rng: random.Random, count: int) -> list[InputRow]:
    """`count` upserts and tombstones (one in seven) of the case's two tables (`test_within.inputs`:
    interleaved, a few keys and NULL keys, times out of order and repeated, bad records)."""
    return inputs(case, runtime, rng, count, nulls=0.15)


def state(runtime) -> tuple:
    """The join's state; where the fast path keeps fewer columns of a row (`kept`), every
    runtime's rows as that path keeps them (the reference path stores whole rows)."""
    join = next(stage for stage in runtime.pipeline.stages if isinstance(stage, JoinStage))
    path = next(iter(runtime.fast_paths.values()))
    columns = None if path.kept is None else {
        path.inputs[topic].alias: [column for column, _ in kept] for topic, kept in path.kept.items()}

    def as_kept(stored: tuple) -> tuple:
        (alias, row), = stored[0].items()
        return stored if columns is None else ({alias: {c: row.get(c) for c in columns[alias]}}, stored[1])

    tables = [sorted(((key, as_kept(stored)) for key, stored in table.items()), key=repr)
              for table in join.processor.tables]
    return join.seq, tables, runtime.counters(), runtime.stream_time


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", range(4))
def test_the_fast_path_gives_what_the_reference_path_gives(case: Case, seed: int, monkeypatch):
    _, outputs = both_sides(case, seed, monkeypatch, updates, state)
    assert any(type(item).__name__ == "Emitted" and item.value is None for item in outputs), "some tombstones"


def test_a_sink_writing_retractions_keeps_the_reference_path():
    """A changelog sink (UPDATE_BEFORE, DELETE with the old row) is not what this path writes."""
    runtime = runtimes(CASES[0])[0]
    assert TableTableUpserts.of(runtime, "users") is not None
    runtime.sink = dataclasses.replace(runtime.sink, emit_retractions=True)
    assert TableTableUpserts.of(runtime, "users") is None
