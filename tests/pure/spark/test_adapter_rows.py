"""The adapter's row conversions without Spark: chunks of Kafka records as the source packs them
for a task (headers null when a record has none) become `InputRow`s in Kafka Streams order,
emitted records become sink rows that keep their headers, and a task that produces its own
results (`TaskSink`) hands librdkafka its sink rows as columns, keeps what the Delta table
cannot take out of Kafka, and packs the table's rows and the dead letters for Spark."""

from __future__ import annotations

import base64
import gc
import json
import pickle
import random

import pandas as pd
import pyarrow as pa
import pyspark
import pytest

from streamjoin.runtime.contract import Emitted, EmittedColumns, InputRow, Rejected, TaskRuntime
from streamjoin.spark.adapter import (
    COLUMNS,
    DEAD_LETTER,
    SINK,
    ordered_rows,
    output_rows,
    process_rows,
)
from streamjoin.spark.task_sink import DEAD_ROWS, TABLE_ROWS, DeadLetters, TaskSink
from streamjoin.spark.collector import cycle_collection_paused
from streamjoin.spark.packing import PACKED_INPUT_SCHEMA, pack_records, record_batch
from tests.pure.runtime import test_lookup


def packed(chunks: list[tuple[str, int, list[tuple]]]) -> pd.DataFrame:
    """A task's packed rows: each chunk is a partition's records (offset, ts, key, value, headers)."""
    if not chunks:
        return PACKED_INPUT_SCHEMA.empty_table().to_pandas()
    batches = [pack_records(topic, partition, record_batch(*map(list, zip(*records))))
               for topic, partition, records in chunks]
    return pd.concat([batch.to_pandas() for batch in batches], ignore_index=True)


# r-0: offset 0 @5 | l-0: offsets 1 @7 (second chunk, given first) and 0 @6 (first chunk)
CHUNKS = [("r", 0, [(0, 5, b"k", b"1", [("a", b"!"), ("a", None)])]),
          ("l", 0, [(1, 7, b"k", b"3", None)]),
          ("l", 0, [(0, 6, b"k", b"2", None)])]


def test_rows_keep_their_headers_in_kafka_streams_order():
    assert list(ordered_rows(packed(CHUNKS))) == [
        InputRow("r", 0, 0, 5, b"k", b"1", (("a", b"!"), ("a", None))),  # smallest head timestamp first
        InputRow("l", 0, 0, 6, b"k", b"2", ()),  # a partition's chunks in offset order
        InputRow("l", 0, 1, 7, b"k", b"3", ()),
    ]


def test_records_without_headers_have_none():
    assert {row.headers for row in ordered_rows(packed(CHUNKS[1:]))} == {()}


def test_within_a_partition_offset_order_wins_over_timestamps():
    # one partition, out-of-order timestamps: replayed as the log holds them
    rows = ordered_rows(packed([("l", 1, [(3, 9, b"a", b"x", None), (4, 2, b"b", b"y", None)])]))
    assert [(row.offset, row.ts) for row in rows] == [(3, 9), (4, 2)]


def test_no_chunks_no_rows():
    assert list(ordered_rows(packed([]))) == []


class _Runtime(TaskRuntime):
    def process(self, row):
        return []

    def end_of_input(self):
        return []


def test_sink_rows_carry_the_emitted_headers_and_dead_letters_none():
    source = InputRow("l", 0, 4, 9, b"k", b"v", (("h", b"x"),))
    rows = output_rows(_Runtime(), [Emitted("out", b"k", b"r", 9, (("h", b"x"),)), Emitted("out", b"k", None, 9),
                                    Rejected("bad")], source)
    by_column = [dict(zip(COLUMNS, row)) for row in rows]
    assert [(r["channel"], r["headers"]) for r in by_column] == [(SINK, (("h", b"x"),)), (SINK, None),
                                                                 (DEAD_LETTER, None)]


@pytest.mark.parametrize("seed", range(3))
def test_a_runs_column_wise_outputs_become_the_sink_rows_the_record_path_gives(seed: int):
    """`process_rows` over runs the stream-table path took a column at a time (`EmittedColumns`):
    the same sink rows, with their sources and headers (replay header dropped), as each record's
    outputs on the reference path written one by one (`output_rows`)."""
    case = test_lookup.CASES[0]
    reference, column_wise, probe = test_lookup.runtimes(case)
    rows = test_lookup.changelog(case, reference, random.Random(seed), 3000, clean=True)
    expected = [out for row in rows for out in output_rows(reference, reference.process_record(row), row)]
    assert any(type(outputs) is EmittedColumns for _, outputs in probe.process_runs(rows))
    assert process_rows(column_wise, rows) == expected
    assert any(row[9] for row in expected) and any(row[9] is None for row in expected)  # with and without headers


def test_cycle_collection_is_paused_for_a_batch_and_restored() -> None:
    assert gc.isenabled()
    with cycle_collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    try:
        with cycle_collection_paused():
            raise RuntimeError("a failing batch")
    except RuntimeError:
        pass
    assert gc.isenabled()
    gc.disable()  # a worker that had it off keeps it off
    try:
        with cycle_collection_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_task_sink_produces_the_sink_rows_of_its_batch_and_keeps_the_rest(monkeypatch):
    produced = in_task_of_batch_4(monkeypatch)
    sink = TaskSink({"bootstrap_servers": ["b:9092"]}, "q")
    dead = (DEAD_LETTER, None, b"k", b"{", 3, "in", 1, 7, "not JSON", None)
    rows = [(SINK, "out", b"k", b"1", 5, "in", 1, 6, None, None), dead,
            (SINK, "out", b"big", b"x" * 100, 7, "in", 1, 9, None, None),  # 338 + 3 + 100 bytes > 400
            (SINK, "out", None, b"2", 6, "in", 1, 8, None, (("h", b"v"),))]
    # no dead-letter target (the case runner): the dead letters are counted, not sent
    assert sink.emit(rows, task=1) == ([], {"produced": 2, "refused_by_kafka": 1, "rejected_by_table": 0,
                                            "table_rows": 0, "dead_letter_rows": 0})
    assert produced == [(({"bootstrap_servers": ["b:9092"]}, ["out", "out"], [b"k", None], [b"1", b"2"], [5, 6],
                          [None, (("h", b"v"),)], "q", "4", 1), {"max_bytes": 400})]
    assert sink.emit([dead], task=1)[1]["produced"] == 0 and len(produced) == 1


def test_a_result_the_table_cannot_take_is_kept_out_of_kafka_and_dead_lettered(monkeypatch):
    from streamjoin.delta.rows import TableRows, declared_schema, unified_schema
    from streamjoin.runner.cases import Case as SqlCase
    from streamjoin.runner.planned import plan_case

    (query,) = plan_case(SqlCase.from_json({
        "id": "out", "dialect": "ksqldb", "inputs": [], "expected": [],
        "setup": ["CREATE STREAM v (id STRING KEY, n BIGINT) WITH (kafka_topic='v', value_format='JSON');"],
        "sql": "CREATE STREAM out AS SELECT id, n FROM v EMIT CHANGES;"}), "").queries
    produced = in_task_of_batch_4(monkeypatch)
    table = TableRows(query.sink_serde, declared_schema(query.sink_serde), "/t/out")
    sink = TaskSink({}, "q", table=pickle.dumps(table), dead_letters=DeadLetters("out-dead-letters", "out", "/t/d"))
    dead = (DEAD_LETTER, None, b"k", b"{", 3, "in", 1, 7, "not JSON", None)
    rows = [(SINK, "OUT", b"a", b'{"N": 1}', 5, "in", 1, 6, None, None), dead,
            (SINK, "OUT", b"b", b'{"N": 100000000000000000000}', 6, "in", 1, 8, None, None)]

    packed, figures = sink.emit(rows, task=1)

    assert unified_schema([figures.pop("table_schema")], table.row_schema) == table.row_schema
    assert figures == {"produced": 1, "refused_by_kafka": 0, "rejected_by_table": 1, "table_rows": 1,
                       "dead_letter_rows": 2}
    to_kafka, to_dead_letters = (args for args, _ in produced)
    assert (to_kafka[1], to_kafka[2]) == (["OUT"], [b"a"])  # the result Delta refuses is in neither sink
    assert (to_dead_letters[1], to_dead_letters[2], to_dead_letters[6]) == (
        ["out-dead-letters"] * 2, [b"k", b"b"], "q/dead-letters")
    assert [row[0] for row in packed] == [TABLE_ROWS, DEAD_ROWS]
    table_rows, letters = (pa.ipc.open_stream(row[3]).read_all() for row in packed)
    assert (table_rows.column("ID").to_pylist(), table_rows.column("N").to_pylist()) == (["a"], [1])
    assert letters.column("offset").to_pylist() == [7, 8]
    assert "cannot be read back for /t/out" in letters.column("reason")[1].as_py()


def in_task_of_batch_4(monkeypatch) -> list:
    """Runs the test as a task of micro-batch 4 whose topics take 400 bytes a record (a dead-letter
    topic 10,000); what it would produce, call by call."""
    class Context:
        @staticmethod
        def getLocalProperty(name):
            return {"streaming.sql.batchId": "4"}.get(name)

    produced = []
    monkeypatch.setattr(pyspark.TaskContext, "get", staticmethod(lambda: Context))
    monkeypatch.setattr("streamjoin.kafka.rdkafka.produce_columns",
                        lambda *args, **kwargs: produced.append((args, kwargs)) or len(args[2]))
    monkeypatch.setattr("streamjoin.kafka.limits.topic_limit", lambda config, topic: 10_000 if topic.endswith("dead-letters") else 400)
    return produced


SPARK_COLUMNS = ["topic", "partition", "offset", "ts", "key", "value", "headers"]


def test_spark_kafka_rows_are_ordered_in_the_task_whatever_order_they_came():
    # Spark's Kafka rows (topic, partition, offset, ts, key, value, headers as Spark's JSON of
    # them) as pyspark hands them to a task, in the order the shuffle brought them: b's
    # timestamps interleave a's, so the task's order is b0 a0 a1 b1 a2
    rows = [("b", 0, 1, 25, b"k", b"b1", None),
            ("a", 0, 2, 30, b"k", b"a2", '[{"key":"h","value":"dg=="},{"key":"n","value":null}]'),
            ("a", 0, 0, 10, b"k", b"a0", None), ("b", 0, 0, 5, b"k", b"b0", None), ("a", 0, 1, 20, None, b"a1", None)]
    ordered = list(ordered_rows(pd.DataFrame(rows, columns=SPARK_COLUMNS)))
    assert [row.value for row in ordered] == [b"b0", b"a0", b"a1", b"b1", b"a2"]
    assert ordered[-1].headers == (("h", b"v"), ("n", None)) and ordered[1].headers == () and ordered[2].key is None
    assert {type(row.partition) for row in ordered} == {int} and {type(row.topic) for row in ordered} == {str}


@pytest.mark.parametrize("seed", range(5))
def test_rows_and_packed_chunks_of_the_same_records_replay_in_the_same_order(seed: int):
    """The same records, as Spark's connector's rows (shuffled) and as streamjoin_kafka's chunks
    (in any order): the task replays them alike (timestamps tie across partitions, and a
    partition's own run backwards in time)."""
    rng = random.Random(seed)
    records = {(topic, partition): [(offset, rng.randrange(20), f"{topic}{partition}".encode(), b"v%d" % offset,
                                     [("h", bytes([offset % 256]))] if rng.random() < 0.2 else None)
                                    for offset in range(rng.randrange(1, 40))]
               for topic in ("a", "b") for partition in (0, 1)}
    chunks = []
    for (topic, partition), queue in records.items():
        cuts = sorted({0, len(queue), *(rng.randrange(len(queue)) for _ in range(3))})
        chunks += [(topic, partition, queue[start:end]) for start, end in zip(cuts, cuts[1:])]
    rng.shuffle(chunks)
    rows = [(topic, partition, offset, ts, key, value, None if headers is None else
             json.dumps([{"key": k, "value": base64.b64encode(v).decode()} for k, v in headers]))
            for (topic, partition), queue in records.items() for offset, ts, key, value, headers in queue]
    rng.shuffle(rows)
    by_rows = list(ordered_rows(pd.DataFrame(rows, columns=SPARK_COLUMNS)))
    assert by_rows == list(ordered_rows(packed(chunks)))
    assert len(by_rows) == sum(map(len, records.values()))
