"""The windowed stream-stream fast path (`streamjoin.runtime.within`) against the reference path.

Each case is a query whose two stream topics take the fast path, run on randomized inputs of
both topics interleaved: timestamps out of order, late past the window and grace, repeated,
and jumping ahead (so stored records expire and outer rows are padded when their windows
close); keys that repeat or are NULL, null values, and records that cannot be decoded, whose
fields are spelled in another case, carry headers, or whose results cannot be evaluated or
encoded. The fast path must give the same outputs per record (results and dead letters with
their reasons), the same counters and stream time, and leave the operator in the same state.

    reference: runtime.process_record(row) for each row          (every stage, record by record)
    fast:      runtime.process_all(rows), runtime.process(row)    (runs of both topics at once)
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta

import pytest

from streamjoin.runtime.contract import REPLAY_HEADER, InputRow
from streamjoin.runtime.stages import JoinStage
from streamjoin.serde.formats import encode_key
from tests.pure.runtime.test_lookup import (KEYS, KSQL_SOURCES, Case, both_paths, runtimes, seeded_runtimes, source,
                                          value_bytes)

VIEWS = source("views", "stream", ["id"], {"id": "STRING", "amount": "BIGINT", "note": "STRING"})
KSQL_STREAMS = (KSQL_SOURCES[0], VIEWS)
LENSES_STREAMS = (source("orders", "stream", ["_key"], {"_key": "INT", "customer_id": "INT", "item": "STRING"}),
                  source("shipments", "stream", ["_key"], {"_key": "INT", "carrier": "STRING", "weight": "INT"}))

CASES = [
    # The bench's shape (bench/stream_joins.py (b)): every output column a plain column.
    Case("ksqlDB INNER JOIN WITHIN", "ksqldb",
         "CREATE STREAM out AS SELECT c.id AS id, c.amount AS a, v.amount AS b FROM clicks c "
         "JOIN views v WITHIN 100 MILLISECONDS GRACE PERIOD 10 MILLISECONDS ON c.id = v.id EMIT CHANGES;",
         KSQL_STREAMS, "clicks", plain=True),
    # ksqlDB's engine (window stores), and an unmatched left row padded when its window closes.
    Case("ksqlDB LEFT JOIN WITHIN GRACE PERIOD", "ksqldb",
         "CREATE STREAM out AS SELECT c.id AS id, c.amount AS a, v.note AS b, c.ROWTIME AS t FROM clicks c "
         "LEFT JOIN views v WITHIN 100 MILLISECONDS GRACE PERIOD 20 MILLISECONDS ON c.id = v.id EMIT CHANGES;",
         KSQL_STREAMS, "clicks", plain=True),
    # The documented lateness (late records dropped), both sides padded, WHERE after the join.
    Case("ksqlDB FULL OUTER JOIN, documented lateness, WHERE", "ksqldb",
         "SET 'streamjoin.window_store_retention'='false';\n"
         "CREATE STREAM out AS SELECT ROWKEY AS k, c.amount AS a, v.amount AS b FROM clicks c "
         "FULL OUTER JOIN views v WITHIN (50 MILLISECONDS, 200 MILLISECONDS) GRACE PERIOD 30 MILLISECONDS "
         "ON c.id = v.id WHERE c.amount IS NULL OR v.amount IS NULL OR c.amount < v.amount EMIT CHANGES;",
         KSQL_STREAMS, "clicks"),
    # Without GRACE PERIOD an unmatched row goes out at once; `c.note + 1` fails to evaluate for a
    # non-NULL note, and the product overflows BIGINT when encoded.
    Case("ksqlDB RIGHT JOIN, failing expressions", "ksqldb",
         "CREATE STREAM out AS SELECT v.id AS id, c.amount * v.amount * 1000000000000 AS big, "
         "CASE WHEN v.amount > 50 THEN c.note + 1 ELSE 0 END AS odd FROM clicks c "
         "RIGHT JOIN views v WITHIN 100 MILLISECONDS ON c.id = v.id EMIT CHANGES;", KSQL_STREAMS, "clicks"),
    # An INNER join on the window stores takes a run in one loop (`StreamStreamInnerRun`); here
    # its results are filtered and projected, and some fail to evaluate or to encode.
    Case("ksqlDB INNER JOIN WITHIN, WHERE, failing expressions", "ksqldb",
         "CREATE STREAM out AS SELECT c.id AS id, c.amount * v.amount * 1000000000000 AS big, "
         "CASE WHEN v.amount > 50 THEN c.note + 1 ELSE 0 END AS odd FROM clicks c "
         "JOIN views v WITHIN 100 MILLISECONDS GRACE PERIOD 10 MILLISECONDS ON c.id = v.id "
         "WHERE c.amount IS NULL OR c.amount <> 3 EMIT CHANGES;", KSQL_STREAMS, "clicks"),
    Case("Lenses LEFT JOIN WITHIN", "lenses",
         "INSERT INTO result SELECT STREAM o.item, s.carrier, s.weight FROM orders AS o "
         "LEFT JOIN shipments AS s ON o._key = s._key WITHIN 150ms;", LENSES_STREAMS, "orders", plain=True),
]


FLINK_STREAMS = (
    source("orders", "stream", [], {"id": "INT", "amount": "BIGINT", "ot": "TIMESTAMP(3)"}) | {"timestamp": "ot"},
    source("shipments", "stream", [], {"oid": "INT", "carrier": "STRING", "st": "TIMESTAMP(3)"}) | {"timestamp": "st"})
FLINK_DDL = ("CREATE TABLE orders (id INT, amount BIGINT, ot TIMESTAMP(3), WATERMARK FOR ot AS ot - INTERVAL '1' SECOND) "
             "WITH ('connector' = 'kafka', 'topic' = 'orders', 'format' = 'json');\n"
             "CREATE TABLE shipments (oid INT, carrier STRING, st TIMESTAMP(3), WATERMARK FOR st AS st - INTERVAL '1' SECOND) "
             "WITH ('connector' = 'kafka', 'topic' = 'shipments', 'format' = 'json');\n")

# Flink's interval join (`StreamStreamInterval`): its records' times are their rowtime columns.
FLINK_CASES = [
    # The documented form (a join in WHERE), every output column a plain column.
    Case("Flink interval join in WHERE", "flink",
         "SELECT o.id, o.amount, s.carrier FROM orders o, shipments s "
         "WHERE o.id = s.oid AND o.ot BETWEEN s.st - INTERVAL '4' SECOND AND s.st", FLINK_STREAMS, "orders", plain=True),
    # Unmatched orders padded once the clock (a watermark delay of 1 s) passes their windows.
    Case("Flink LEFT interval join, watermark delay", "flink",
         FLINK_DDL + "SELECT o.id, o.ot, s.carrier FROM orders o LEFT JOIN shipments s ON o.id = s.oid "
         "AND o.ot BETWEEN s.st - INTERVAL '3' SECOND AND s.st + INTERVAL '1' SECOND", FLINK_STREAMS, "orders"),
    # A residual condition, WHERE after the join, computed columns, a cast that fails.
    Case("Flink FULL interval join, residual, WHERE, failing cast", "flink",
         "SELECT COALESCE(o.id, s.oid) AS id, o.amount * 2 AS twice, "
         "CASE WHEN o.amount > 40 THEN CAST(s.carrier AS INT) ELSE 0 END AS n "
         "FROM orders o FULL JOIN shipments s ON o.id = s.oid AND o.amount < 60 "
         "AND o.ot BETWEEN s.st - INTERVAL '2' SECOND AND s.st WHERE s.carrier IS NULL OR s.carrier <> 'bob'",
         FLINK_STREAMS, "orders"),
    Case("Flink RIGHT interval join", "flink",
         "SELECT s.oid, s.carrier, o.amount FROM orders o RIGHT JOIN shipments s ON o.id = s.oid "
         "AND s.st BETWEEN o.ot AND o.ot + INTERVAL '5' SECOND", FLINK_STREAMS, "orders", plain=True),
]


def inputs(case: Case, runtime, rng: random.Random, count: int, nulls: float = 0.03) -> list[InputRow]:
    """`count` records of the case's two topics interleaved, in runs of one topic or mixed, a
    share `nulls` of them without a value; time moves forward with noise, now and then far back
    (late) or far ahead (windows close)."""
    rows, offsets, now = [], {}, 1_000
    for _ in range(count):
        definition = rng.choice(case.sources)
        topic, key_columns, columns = definition["topic"], definition["key"], definition["columns"]
        key = None
        if rng.random() > 0.05:
            key = encode_key(runtime.inputs[topic][0], (rng.choice(KEYS[columns[key_columns[0]]]),))
        value = None if rng.random() < nulls else value_bytes(rng, columns, key_columns)
        if isinstance(value, str):
            value = value.encode()
        roll = rng.random()
        now += 400 if roll < 0.02 else rng.randrange(0, 8)
        ts = now - rng.randrange(200, 600) if roll > 0.95 else now if roll > 0.9 else now + rng.randrange(-40, 40)
        headers = (("h", b"v"), (REPLAY_HEADER, b"earlier write")) if rng.random() < 0.1 else ()
        offsets[topic] = offsets.get(topic, -1) + 1
        rows.append(InputRow(topic, 0, offsets[topic], ts, key, value, headers))
    return rows


def interval_inputs(case: Case, runtime, rng: random.Random, count: int) -> list[InputRow]:
    """`count` keyless records of the case's two Flink topics interleaved, each timed by its
    rowtime column: mostly moving forward with noise, now and then far back (its window closed)
    or far ahead (windows close); some rowtimes NULL or not a time, some values not decoding."""
    rows, offsets, now = [], {}, 100_000
    for _ in range(count):
        definition = rng.choice(case.sources)
        topic, columns = definition["topic"], definition["columns"]
        roll = rng.random()
        now += 20_000 if roll < 0.02 else rng.randrange(0, 400)
        ts = now - rng.randrange(6_000, 9_000) if roll > 0.95 else now if roll > 0.9 else now + rng.randrange(-400, 400)
        value = None if rng.random() < 0.03 else with_rowtime(value_bytes(rng, columns, []), definition["timestamp"],
                                                               ts, rng)
        offsets[topic] = offsets.get(topic, -1) + 1
        rows.append(InputRow(topic, 0, offsets[topic], 1_000, None, value, ()))
    return rows


def with_rowtime(value: bytes | str, column: str, ts: int, rng: random.Random) -> bytes:
    """A JSON object `value` with its rowtime `column` (in whatever case it is spelled) as Flink's
    text of `ts`, now and then NULL or left as `value_bytes` wrote it (not a time)."""
    try:
        fields = json.loads(value)
    except ValueError:
        return value.encode() if isinstance(value, str) else value
    if not isinstance(fields, dict) or rng.random() < 0.03:
        return json.dumps(fields).encode()
    spelled = next((name for name in fields if name.lower() == column), column)
    fields[spelled] = None if rng.random() < 0.03 else \
        (datetime(1970, 1, 1) + timedelta(milliseconds=ts)).isoformat(sep=" ", timespec="milliseconds")
    return json.dumps(fields).encode()


def state(runtime) -> tuple:
    """The join's state; where the fast path keeps fewer columns of a stored row (`kept`), every
    runtime's rows as that path keeps them (the reference path stores whole rows)."""
    join = next(stage for stage in runtime.pipeline.stages if isinstance(stage, JoinStage))
    processor = join.processor
    path = next(iter(runtime.fast_paths.values()))
    columns = None if path.kept is None else {
        path.inputs[topic].alias: [column for column, _ in kept] for topic, kept in path.kept.items()}

    def as_kept(entry: list) -> list:
        (alias, row), = entry[2].items()
        return entry if columns is None else [*entry[:2], {alias: {c: row.get(c) for c in columns[alias]}}, *entry[3:]]

    stores = [sorted(((key, [as_kept(entry) for entry in entries]) for key, entries in store.items()), key=repr)
              for store in processor.stores]
    clock = (processor.time.now, processor.store_times, processor.expiring) if hasattr(processor, "store_times") \
        else (processor.max_ts, processor.floor)  # ksqlDB's window stores; Flink's interval join
    return (join.seq, stores, sorted(processor.timers, key=repr), processor.next_id, *clock, runtime.counters(),
            runtime.stream_time)


def both_sides(case: Case, seed: int, monkeypatch, rows, state) -> tuple[tuple, list]:
    """`case`'s three runtimes after 800 `rows(case, runtime, rng, count)` went through both
    paths (`both_paths`, compared with `state`), once both topics are seen to take one fast path,
    plain (and keeping fewer columns) as the case says; and every output, of both kinds."""
    three = seeded_runtimes(case, seed, monkeypatch)
    path = three[1].fast_paths.get(case.stream)
    assert path is not None and set(path.topics) == {s["topic"] for s in case.sources}, "both topics take it"
    assert (path.plain is not None) == case.plain
    assert (path.kept is not None) == case.plain  # a plain path keeps fewer columns in state
    outputs = both_paths(rows(case, three[0], random.Random(seed), 800), three, state)
    assert {type(item).__name__ for item in outputs} == {"Emitted", "Rejected"}  # both kinds reached
    return three, outputs


@pytest.mark.parametrize("case, rows", [(case, inputs) for case in CASES] +
                         [(case, interval_inputs) for case in FLINK_CASES],
                         ids=lambda p: p.name if isinstance(p, Case) else p.__name__)
@pytest.mark.parametrize("seed", range(4))
def test_the_fast_path_gives_what_the_reference_path_gives(case: Case, rows, seed: int, monkeypatch):
    three, _ = both_sides(case, seed, monkeypatch, rows, state)
    assert three[1].end_of_input() == three[0].end_of_input()
    counts = three[0].counters()
    # ksqlDB without a GRACE PERIOD: the grace is Kafka Streams' legacy day, nothing here is late.
    legacy_grace = case.dialect == "ksqldb" and "GRACE" not in case.sql
    assert (counts["late"] or legacy_grace) and counts["null_key"] and counts["output_records"] > 50, counts


def test_a_self_join_keeps_the_reference_path():
    case = Case("ksqlDB self-join", "ksqldb",
                "CREATE STREAM out AS SELECT a.id AS id, b.amount AS b FROM clicks a "
                "JOIN clicks b WITHIN 100 MILLISECONDS ON a.id = b.id EMIT CHANGES;", (KSQL_SOURCES[0],), "clicks")
    _, runtime, _ = runtimes(case)
    assert runtime.fast_paths == {}  # one topic, two entries: records would enter both sides
