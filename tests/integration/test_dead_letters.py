"""Bad records become dead letters (topic + Delta table) while the good ones flow on.

A streaming query reads the topic through the `streamjoin_kafka` source, decodes each micro-batch
with `decode_frame`, appends the good rows to Delta and writes the dead letters.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

import pytest

from streamjoin.app.outputs import DEAD_LETTER_SCHEMA, decode_frame, decode_rows, split_dead_letters, write_dead_letters
from streamjoin.delta.tables import DeltaSink, read_delta_arrow
from streamjoin.serde.formats import SerdeSpec
from streamjoin.kafka.admin import create_topics, produce, read_all
from streamjoin.kafka.records import OutRecord

pytestmark = pytest.mark.integration

SPEC = SerdeSpec.of({"id": "STRING", "amount": "INT"}, ["id"], key_format="KAFKA", value_format="JSON")


@dataclass(frozen=True)
class Case:
    inputs: tuple  # (partition, key, value, record ts)
    expected: str | tuple  # a dead-letter reason fragment, or the decoded good row


# Per partition the offsets are the arrival positions: p0 = a@0, b@1; p1 = c@0, d@1, e@2.
CASES = [
    Case((0, b"a", b'{"amount": 1}', 1000), ("a", 1, False)),
    Case((0, b"b", b'{"amount": ', 2000), "value: not valid JSON"),
    Case((1, b"c", b'{"amount": "x"}', 3000), "column value.amount: cannot read 'x' as INT"),
    Case((1, b"d", None, 4000), ("d", None, True)),  # a null value is a tombstone, not an error
    Case((1, b"e", b'{"AMOUNT": 5}', 5000), ("e", 5, False)),
]


def offsets_of(cases: list[Case]) -> list[int]:
    seen: dict[int, int] = {}
    result = []
    for case in cases:
        partition = case.inputs[0]
        result.append(seen.get(partition, 0))
        seen[partition] = result[-1] + 1
    return result


def test_malformed_records_land_in_dead_letters_while_good_records_flow(
        spark, kafka_bootstrap, tmp_delta_root, tmp_path, unique_topic) -> None:
    topic, dead_topic = unique_topic, f"{unique_topic}-dead"
    good_path, dead_path = str(tmp_delta_root / "dl_good"), str(tmp_delta_root / "dl_dead")
    create_topics(kafka_bootstrap, {topic: 2, dead_topic: 1})
    produce(kafka_bootstrap, topic, [OutRecord(key=k, value=v, timestamp_ms=ts, partition=p)
                                     for p, k, v, ts in (c.inputs for c in CASES)])
    dead_counts: dict[int, int] = {}  # batch id -> dead letters written

    def each_batch(batch, batch_id: int) -> None:
        decoded = decode_rows(batch, SPEC).persist()  # one decode pass feeds both outputs
        good, dead = split_dead_letters(decoded, "orders_query")
        DeltaSink(good_path, app_id="orders_query").write_batch(good, batch_id)
        dead_counts[batch_id] = write_dead_letters(dead, batch_id, dead_topic, dead_path, bootstrap=kafka_bootstrap)
        decoded.unpersist()

    query = (spark.readStream.format("streamjoin_kafka")
             .option("kafka.bootstrap.servers", kafka_bootstrap).option("subscribe", topic).load()
             .writeStream.foreachBatch(each_batch).trigger(availableNow=True)
             .option("checkpointLocation", str(tmp_path / "checkpoint")).start())
    finished = query.awaitTermination(120)
    if not finished:
        query.stop()
    assert finished, "the availableNow query did not finish within 120 s"
    assert query.exception() is None  # bad records never fail the query

    offsets = offsets_of(CASES)
    expected_good = sorted((c.expected + (c.inputs[0], off, c.inputs[3]))
                           for c, off in zip(CASES, offsets) if isinstance(c.expected, tuple))
    good_rows = sorted((r["id"], r["amount"], r["__tombstone"], r["__partition"], r["__offset"], r["__ts"])
                       for r in read_delta_arrow(good_path).to_pylist())
    assert good_rows == expected_good
    assert {r["__topic"] for r in read_delta_arrow(good_path).to_pylist()} == {topic}

    expected_dead = sorted((topic, c.inputs[0], off, c.inputs[3], c.inputs[1], c.inputs[2], "orders_query")
                           for c, off in zip(CASES, offsets) if isinstance(c.expected, str))
    reasons = {c.inputs[1]: c.expected for c in CASES if isinstance(c.expected, str)}
    dead_table = read_delta_arrow(dead_path).to_pylist()
    assert sorted((r["source_topic"], r["partition"], r["offset"], r["timestamp"], r["key"], r["value"], r["query"])
                  for r in dead_table) == expected_dead
    assert all(reasons[r["key"]] in r["reason"] for r in dead_table)
    assert sum(dead_counts.values()) == len(expected_dead)

    # The dead-letter topic carries the same letters as JSON, raw bytes in base64, keyed like the source.
    letters = [json.loads(r.value) for r in read_all(kafka_bootstrap, dead_topic)]
    assert sorted((x["source_topic"], x["partition"], x["offset"], x["timestamp"], base64.b64decode(x["key"]),
                   base64.b64decode(x["value"]), x["query"]) for x in letters) == expected_dead

    # Spark replays the last batch after a crash: already in the Delta table, so nothing is written.
    last_dead_batch = max(b for b, n in dead_counts.items() if n)
    replayed = read_delta_arrow(dead_path)
    assert write_dead_letters(replayed, last_dead_batch, dead_topic, dead_path, bootstrap=kafka_bootstrap) == 0
    assert len(read_all(kafka_bootstrap, dead_topic)) == len(expected_dead)
    assert read_delta_arrow(dead_path).num_rows == len(expected_dead)


def test_decode_frame_schemas(spark) -> None:
    """The documented column names and types of both outputs (batch frame, no broker needed)."""
    kafka_rows = spark.createDataFrame(
        [(b"k", b'{"amount": 2}', "t", 0, 0, None, 0, [])],
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, "
        "timestampType int, headers array<struct<key:string,value:binary>>")
    good, dead = decode_frame(kafka_rows, SPEC, "q")
    assert good.dtypes == [("id", "string"), ("amount", "int"), ("__ts", "bigint"), ("__timestamp", "bigint"),
                           ("__topic", "string"), ("__partition", "int"), ("__offset", "bigint"),
                           ("__tombstone", "boolean")]
    assert dead.schema.simpleString() == f"struct<{DEAD_LETTER_SCHEMA.replace(' ', ':').replace(',:', ',')}>"
    assert [tuple(r)[:2] for r in good.collect()] == [("k", 2)] and dead.count() == 0
