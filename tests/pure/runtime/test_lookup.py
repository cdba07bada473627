"""The stream-table fast path (`streamjoin.runtime.lookup`) against the reference path.

Each case is a query whose stream side takes the fast path, run on randomized changelogs: table
upserts and tombstones interleaved with stream records, timestamps out of order and late, keys
that repeat or are NULL, and some records that cannot be decoded (not JSON, a field of the wrong
type), whose fields are spelled in another case, carry headers, or whose results cannot be
evaluated or encoded. The fast path must give the same outputs per record (results and dead
letters with their reasons), the same counters and stream time, and leave the same state.

    reference: runtime.process_record(row) for each row          (every stage, record by record)
    fast:      runtime.process_all(rows), runtime.process(row)    (runs of stream records at once)
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import pytest

from streamjoin.runner.cases import Case as SqlCase
from streamjoin.runner.planned import plan_case
from streamjoin.runtime import task
from streamjoin.runtime.contract import REPLAY_HEADER, InputRow
from streamjoin.runtime.stages import JoinStage
from streamjoin.serde.formats import encode_key


def source(name: str, kind: str, key: list[str], columns: dict) -> dict:
    return {"name": name, "kind": kind, "topic": name, "partitions": 1, "key": key, "columns": columns,
            "timestamp": None}


KSQL_SOURCES = (
    source("clicks", "stream", ["id"], {"id": "STRING", "amount": "BIGINT", "note": "STRING"}),
    source("users", "table", ["id"], {"id": "STRING", "name": "STRING", "score": "BIGINT"}),
)
LENSES_SOURCES = (
    source("customers", "table", ["_key"], {"_key": "INT", "id": "INT", "name": "STRING"}),
    source("orders", "stream", ["_key"], {"_key": "INT", "customer_id": "INT", "item": "STRING"}),
)
SQLSTREAM_SOURCES = (
    source("events", "stream", [], {"row_id": "INTEGER", "animal_id": "INTEGER", "weight": "INTEGER"}),
    source("animals", "table", ["animal_id"], {"animal_id": "INTEGER", "edible": "BOOLEAN", "name": "VARCHAR(32)"}),
)


@dataclass(frozen=True)
class Case:
    name: str
    dialect: str
    sql: str
    sources: tuple[dict, ...]
    stream: str  # the source whose records take the fast path
    plain: bool = False  # whether its results are read a column at a time (`StreamTableLookup.plain`)


CASES = [
    Case("ksqlDB LEFT JOIN", "ksqldb",
         "CREATE STREAM out AS SELECT c.id AS id, c.amount AS amount, u.name AS name, u.score AS score "
         "FROM clicks c LEFT JOIN users u ON c.id = u.id EMIT CHANGES;", KSQL_SOURCES, "clicks", plain=True),
    # The pseudo-columns of the stream record, the table's columns first, an INNER join.
    Case("ksqlDB INNER JOIN of plain columns", "ksqldb",
         "CREATE STREAM out AS SELECT u.score AS score, c.id AS id, c.ROWTIME AS t, c.ROWOFFSET AS o, "
         "c.ROWPARTITION AS p, c.note AS note FROM clicks c JOIN users u ON c.id = u.id EMIT CHANGES;",
         KSQL_SOURCES, "clicks", plain=True),
    # `c.note + 1` fails to evaluate for a non-NULL note; the product overflows BIGINT when encoded.
    Case("ksqlDB INNER JOIN, failing expressions", "ksqldb",
         "CREATE STREAM out AS SELECT c.id AS id, c.amount * u.score * 1000000000000 AS big, "
         "CASE WHEN c.amount > 50 THEN c.note + 1 ELSE 0 END AS odd, c.ROWTIME AS t "
         "FROM clicks c JOIN users u ON c.id = u.id EMIT CHANGES;", KSQL_SOURCES, "clicks"),
    # WHERE after the join: filter stages between the join and the projection.
    Case("ksqlDB LEFT JOIN with WHERE", "ksqldb",
         "CREATE STREAM out AS SELECT c.id AS id, u.name AS name FROM clicks c LEFT JOIN users u ON c.id = u.id "
         "WHERE u.score IS NULL OR c.amount < 50 EMIT CHANGES;", KSQL_SOURCES, "clicks"),
    # A residual over the table row only (Lenses allows it in ON), the stream on the left.
    Case("Lenses JOIN with a residual", "lenses",
         "WITH customersTable AS (SELECT TABLE * FROM customers);\n"
         "WITH ordersStream AS (SELECT STREAM * FROM orders);\n"
         "INSERT INTO result SELECT STREAM customersTable.name, ordersStream.item FROM ordersStream "
         "JOIN customersTable ON len(customersTable.name) > 3 OR customersTable._key > 1;",
         LENSES_SOURCES, "orders"),
    # The table as of the first stream record (s-Server's static join), a LEFT JOIN with USING.
    Case("s-Server static LEFT JOIN", "sqlstream",
         "SELECT STREAM * from events e left join animals a using (animal_id);", SQLSTREAM_SOURCES, "events",
         plain=True),
    Case("s-Server JOIN with extra filters", "sqlstream",
         "SELECT STREAM e.row_id, e.animal_id, a.name from events e join animals a "
         "on (e.animal_id = a.animal_id and a.edible);", SQLSTREAM_SOURCES, "events"),
]

KEYS = {"STRING": ["k1", "k2", "k3", "K1", "ü"], "INT": [1, 2, 3, 4], "INTEGER": [1, 2, 3, 4]}


def field_value(rng: random.Random, column_type: str, clean: bool = False):
    """A JSON value for a column: mostly of its type, sometimes NULL or of another kind (`clean`:
    never one that does not decode)."""
    roll = rng.random()
    if roll < 0.08:
        return None
    if column_type in ("BIGINT", "INT", "INTEGER"):
        if roll < 0.12:
            return str(rng.randrange(100))  # a number as text: read as the number
        if roll < 0.14 and not clean:
            return "not a number"  # does not decode
        return rng.choice([rng.randrange(100), 2**40, -7]) if column_type == "BIGINT" else rng.choice([1, 2, 3, 4, 60])
    if column_type == "BOOLEAN":
        return rng.random() < 0.5
    if roll < 0.12:
        return 12.5  # a STRING column reads any JSON value as its text
    return rng.choice(["a", "bob", 'quote " and \\ backslash', "tab\t", "naïve ☃", "50% off", "long name"])


def value_bytes(rng: random.Random, columns: dict, key: list[str], clean: bool = False) -> bytes:
    """A JSON value of the columns; some not JSON, not an object, with names in another case, a
    field missing or an extra one (`clean`: none of these, every value decodes as it is)."""
    roll = max(rng.random(), 0.14) if clean else rng.random()
    if roll < 0.02:
        return b"{not json"
    if roll < 0.03:
        return b"[1, 2]"
    fields = {name: field_value(rng, t, clean) for name, t in columns.items() if name not in key}
    if roll < 0.08:
        fields = {name.upper() if name.islower() else name.lower(): v for name, v in fields.items()}
    elif roll < 0.11:
        fields.pop(next(iter(fields)))  # a missing field is NULL
    elif roll < 0.14:
        fields["extra"] = [1, {"x": 2}]
    text = json.dumps(fields)
    return (" " + text) if roll > 0.98 else text.encode()  # leading whitespace: still JSON


def changelog(case: Case, runtime, rng: random.Random, count: int, clean: bool = False) -> list[InputRow]:
    """`count` records of the case's two sources: some table records first (what a static join
    sees), then mostly stream records in runs between table records; timestamps out of order.
    `clean`: every stream record has a value that decodes (the column-wise path takes whole runs)."""
    rows, offsets = [], {}
    table = next(s for s in case.sources if s["name"] != case.stream)
    stream = next(s for s in case.sources if s["name"] == case.stream)
    for n in range(count):
        definition = table if n < 20 or rng.random() < 0.15 else stream
        topic = definition["topic"]
        serde = runtime.inputs[topic][0]
        key_columns = definition["key"]
        key = None
        if key_columns and rng.random() > 0.05:
            key = encode_key(serde, (rng.choice(KEYS[definition["columns"][key_columns[0]]]),))
        is_table = definition["kind"] == "table"
        clean_stream = clean and not is_table
        value = None if (is_table and rng.random() < 0.15) or (rng.random() < 0.02 and not clean_stream) else \
            value_bytes(rng, definition["columns"], key_columns, clean_stream)
        if isinstance(value, str):
            value = value.encode()
        headers = ()
        if rng.random() < 0.1:
            headers = (("h", b"v"), (REPLAY_HEADER, b"earlier write"))
        offset = offsets.get(topic, 0)
        offsets[topic] = offset + 1
        rows.append(InputRow(topic, 0, offset, 1_000 + rng.randrange(-200, 400) + len(rows) * 3, key, value, headers))
    return rows


def runtimes(case: Case):
    sql_case = SqlCase.from_json({"id": case.name, "dialect": case.dialect, "sql": case.sql,
                                  "sources": list(case.sources), "inputs": [], "expected": []})
    (query,) = plan_case(sql_case, "").queries
    return query.factory(0), query.factory(0), query.factory(0)


def state(runtime) -> tuple:
    join = next(stage for stage in runtime.pipeline.stages if isinstance(stage, JoinStage))
    processor = join.processor
    return (join.seq, processor.stream_started, sorted(processor.table.items(), key=repr),
            runtime.counters(), runtime.stream_time)


def seeded_runtimes(case: Case, seed: int, monkeypatch) -> tuple:
    """`runtimes(case)`; with an odd seed the runs are cut into many short ones."""
    if seed % 2:
        monkeypatch.setattr(task, "RUN_LENGTH", 7)
    return runtimes(case)


def both_paths(rows: list[InputRow], runtimes: tuple, state) -> list:
    """Each row's outputs on the reference path, once runs through the fast path (`process_all`)
    and its records one at a time (`process`) gave the same per row and left the same `state`."""
    reference, in_runs, one_by_one = runtimes
    expected = [(row, reference.process_record(row)) for row in rows]
    assert list(in_runs.process_all(rows)) == expected
    assert [(row, one_by_one.process(row)) for row in rows] == expected
    assert state(in_runs) == state(reference) == state(one_by_one)
    return [item for _, items in expected for item in items]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("seed", range(4))
def test_the_fast_path_gives_what_the_reference_path_gives(case: Case, seed: int, monkeypatch):
    three = seeded_runtimes(case, seed, monkeypatch)
    fast_paths = three[1].fast_paths
    assert case.stream in fast_paths, "the query should take the fast path"
    assert (fast_paths[case.stream].plain is not None) == case.plain
    outputs = both_paths(changelog(case, three[0], random.Random(seed), 600), three, state)
    kinds = {type(item).__name__ for item in outputs}
    assert kinds == {"Emitted", "Rejected"}, kinds  # the changelog reached both kinds of output


@pytest.mark.parametrize("case", [case for case in CASES if case.plain], ids=lambda c: c.name)
@pytest.mark.parametrize("seed", range(4))
def test_whole_runs_a_column_at_a_time_give_what_the_reference_path_gives(case: Case, seed: int, monkeypatch):
    """Stream records that all decode: their runs go column-wise (`process_columns`) from
    decoding to the sink's bytes, table records still between them."""
    three = seeded_runtimes(case, seed, monkeypatch)
    taken = []
    column_wise = type(three[1].fast_paths[case.stream]).process_columns
    monkeypatch.setattr(type(three[1].fast_paths[case.stream]), "process_columns",
                        lambda path, rows, segment: taken.append(result := column_wise(path, rows, segment)) or result)
    both_paths(changelog(case, three[0], random.Random(seed), 600, clean=True), three, state)
    assert sum(result is not None for result in taken) >= len(taken) // 2 > 0, "runs should go column-wise"
