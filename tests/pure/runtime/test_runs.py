"""Runs of records (`PipelineRuntime.process_all`, what the Spark adapter calls) against the record
path (`process_record`) for queries without a fast path: each run is decoded at once
(`streamjoin.serde.batches`) and then goes through the pipeline record by record. Same outputs
per record, counters, stream time and operator state, on the randomized changelogs of
`test_lookup` (bad records, case-folded names, tombstones, late records, runs cut short)."""

from __future__ import annotations

import random

import pytest
from pyspark import cloudpickle  # how the Spark adapter checkpoints a runtime: the state compared

from streamjoin.runtime import task
from tests.pure.runtime.test_lookup import KSQL_SOURCES, LENSES_SOURCES, Case, changelog, runtimes, source

CASES = [
    # (a primary-key table-table join takes a fast path: tests/pure/runtime/test_upserts.py)
    Case("ksqlDB foreign-key table-table LEFT JOIN", "ksqldb",
         "CREATE TABLE out AS SELECT o.id AS id, o.item AS item, u.name AS name FROM orders o "
         "LEFT JOIN users u ON o.user_id = u.id EMIT CHANGES;",
         (source("orders", "table", ["id"], {"id": "STRING", "user_id": "STRING", "item": "STRING"}),
          KSQL_SOURCES[1]), "orders"),
    Case("Lenses table RIGHT JOIN stream", "lenses",
         "WITH customersTable AS (SELECT TABLE * FROM customers);\n"
         "WITH ordersStream AS (SELECT STREAM * FROM orders);\n"
         "INSERT INTO result SELECT STREAM customersTable.name, ordersStream.item FROM customersTable "
         "RIGHT JOIN ordersStream ON customersTable._key = ordersStream._key;", LENSES_SOURCES, "orders"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", range(3))
def test_runs_give_what_records_one_by_one_give(case: Case, seed: int, monkeypatch):
    if seed % 2:
        monkeypatch.setattr(task, "RUN_LENGTH", 5)
    reference, in_runs, _ = runtimes(case)
    assert not in_runs.fast_paths, "a query without a fast path"
    rows = changelog(case, reference, random.Random(seed), 500)
    expected = [(row, reference.process_record(row)) for row in rows]
    assert list(in_runs.process_all(rows)) == expected
    assert in_runs.counters() == reference.counters()
    assert in_runs.stream_time == reference.stream_time
    assert cloudpickle.dumps(in_runs.pipeline) == cloudpickle.dumps(reference.pipeline)
    kinds = {type(item).__name__ for _, items in expected for item in items}
    assert kinds == {"Emitted", "Rejected"}, kinds
