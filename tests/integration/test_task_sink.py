"""A query whose results go only to Kafka (`run_available`, the case runner, a repartition step):
each task produces its own results (`adapter.TaskSink`) instead of handing them to the driver.

Two input partitions, so two tasks. Every result on the output topic carries the replay id of the
task that made it, `<query>@<epoch>:<batch>:<task>.<seq>` (one epoch for the checkpoint), where the task is the Kafka partition its input
came from and seq counts from 0 in each task's batch; the run's report counts what the tasks
produced; a second batch continues from the checkpoint with its own batch id."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from streamjoin.kafka import admin
from streamjoin.kafka.records import REPLAY_HEADER, place
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog
from streamjoin.runtime.compiled import CompiledQuery
from streamjoin.runtime.compiler import source_serde
from streamjoin.spark.query import run_available

SQL = ("CREATE STREAM {out} AS SELECT c.id AS id, c.n AS n, u.name AS name "
       "FROM clicks c LEFT JOIN users u ON c.id = u.id EMIT CHANGES;")


def sources(prefix: str) -> list[dict]:
    return [{"name": "clicks", "kind": "stream", "topic": f"{prefix}-clicks", "partitions": 2, "key": ["id"],
             "columns": {"id": "STRING", "n": "BIGINT"}, "timestamp": None},
            {"name": "users", "kind": "table", "topic": f"{prefix}-users", "partitions": 2, "key": ["id"],
             "columns": {"id": "STRING", "name": "STRING"}, "timestamp": None}]


def produce(bootstrap: str, catalog: Catalog, source: str, rows: list[tuple]) -> dict[str, int]:
    """(key, value, ts) rows as the source's serde writes them; the partition of each key."""
    definition = catalog.get(source)
    serde = source_serde(definition)
    placed = [place(definition.topic, definition.partitions, serde, key, value, ts, n)
              for n, (key, value, ts) in enumerate(rows)]
    admin.produce(bootstrap, definition.topic, [p.record for p in placed])
    return {key: p.partition for (key, _, _), p in zip(rows, placed)}


@pytest.mark.integration
def test_each_task_produces_its_results_under_its_own_replay_ids(spark, kafka_bootstrap, unique_topic, tmp_path):
    catalog = Catalog.from_case_sources(sources(unique_topic))
    out = f"{unique_topic}-out".replace("-", "_")
    (planned,) = plan_program(SQL.format(out=out), catalog, "ksqldb").queries
    query = CompiledQuery(planned.root, "ksqldb")
    admin.create_topics(kafka_bootstrap, query.topic_partitions())
    produce(kafka_bootstrap, catalog, "users", [(f"u{i}", {"name": f"user {i}"}, 1000 + i) for i in range(8)])
    options, config = {"kafka.bootstrap.servers": kafka_bootstrap}, {"bootstrap_servers": [kafka_bootstrap]}
    checkpoint = tmp_path / "checkpoint"

    # batch 0: clicks 0..19, batch 1 (same checkpoint): clicks 20..29
    clicks = [(f"u{i % 8}", {"n": i}, 2000 + i) for i in range(30)]
    partition_of = produce(kafka_bootstrap, catalog, "clicks", clicks[:20])
    first = run_available(spark, query, options, config, checkpoint)
    produce(kafka_bootstrap, catalog, "clicks", clicks[20:])
    second = run_available(spark, query, options, config, checkpoint)

    written = admin.read_all(kafka_bootstrap, query.sink.topic)
    assert (first.output_rows, second.output_rows, len(written)) == (20, 10, 30)
    seqs, writers = defaultdict(list), set()  # (batch, task) -> seq, in produce order per task
    for record in sorted(written, key=lambda r: (r.partition, r.offset)):
        writer, batch, task_seq = record.header(REPLAY_HEADER).decode().split(":")
        task, seq = map(int, task_seq.split("."))
        key = record.key.decode()
        assert writer.startswith(f"{query.name}@") and task == partition_of[key], (writer, task, key)
        writers.add(writer)
        assert json.loads(record.value)["NAME"] == f"user {key[1:]}"
        seqs[int(batch), task].append(seq)
    assert {batch for batch, _ in seqs} == {0, 1} and {task for _, task in seqs} == {0, 1}
    assert len(writers) == 1, writers
    for numbered in seqs.values():  # each task's output partition is its own: seq in offset order
        assert numbered == list(range(len(numbered)))
