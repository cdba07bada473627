"""The Flink document's event-time temporal join with its versioned table declared as the document
writes it (`'value.format' = 'debezium-json'`, the version time `METADATA FROM
'value.source.timestamp' VIRTUAL`), through the real path: Debezium JSON change records produced
to the broker, the query run by Spark, the sink read back and compared with the document's result
table. The conformance case of the same example gives the changelog (as upserts), the orders and
the expected rows; here the changelog is written as Debezium writes it (create, update with its
before row, delete, then the compaction tombstone), each record's Kafka timestamp a second after
its source timestamp, so a version time taken from the record timestamp would not match."""

from __future__ import annotations

import json
import uuid

import pytest

from streamjoin.kafka import admin
from streamjoin.kafka.client import kafka_client_config, spark_options
from streamjoin.kafka.records import OutRecord, place
from streamjoin.runner.cases import Case, load_cases
from streamjoin.runner.compare import compare
from streamjoin.runner.planned import plan_case
from streamjoin.runner.wire import decode_output
from streamjoin.settings import Settings
from streamjoin.spark.query import run_available
from tests.paths import CONFORMANCE

CASE = next(c for c in load_cases([CONFORMANCE / "flink_joins.json"])
            if c.id == "flink.temporal.event_time.product_changelog")
# The document elides the orders table's WITH options (`...`); this one reads JSON from 'orders'.
ORDERS = """CREATE TABLE orders (
  order_id STRING,
  product_id STRING,
  order_time TIMESTAMP(3),
  WATERMARK FOR order_time AS order_time
) WITH ('connector' = 'kafka', 'topic' = 'orders', 'value.format' = 'json')"""
DELAY_MS = 1_000  # each change record reaches Kafka a second after the database made the change


def debezium_records(case: Case) -> list[OutRecord]:
    """The case's changelog (upserts keyed by product_id; a null value deletes) as Debezium
    writes it: c, u with the before row, d with the before row and then a null-value tombstone."""
    rows: dict[str, dict] = {}
    out = []
    for record in (r for r in case.inputs if r.source == "product_changelog"):
        key = record.key
        before = rows.get(key)
        after = None if record.value is None else {"product_id": key, **record.value}
        op = "d" if after is None else ("u" if before else "c")
        envelope = {"before": before, "after": after, "op": op, "ts_ms": record.ts + DELAY_MS,
                    "source": {"ts_ms": record.ts, "db": "inventory", "table": "products"}}
        key_bytes = json.dumps({"product_id": key}).encode()
        out.append(OutRecord(key_bytes, json.dumps(envelope).encode(), record.ts + DELAY_MS))
        if after is None:
            out.append(OutRecord(key_bytes, None, record.ts + DELAY_MS))
            rows.pop(key, None)
        else:
            rows[key] = after
    return out


@pytest.mark.integration
def test_the_documents_debezium_temporal_join(spark, kafka_bootstrap, tmp_path):
    changelog_ddl = next(s for s in CASE.ddl if "debezium-json" in s)
    set_zone = next(s for s in CASE.ddl if s.startswith("SET"))
    case = Case(CASE.id, "flink", CASE.sql, setup=(ORDERS, set_zone, changelog_ddl), settings=CASE.settings)
    settings = Settings.from_env()
    prefix = f"sj-cdc-{uuid.uuid4().hex[:8]}."
    planned = plan_case(case, topic_prefix=prefix)
    admin.create_topics(kafka_bootstrap, planned.topic_partitions, settings=settings)
    admin.produce(kafka_bootstrap, prefix + "products", debezium_records(CASE), settings=settings)
    orders = [place(*planned.input_target(r), sequence=i).record
              for i, r in enumerate(CASE.inputs) if r.source == "orders"]
    admin.produce(kafka_bootstrap, prefix + "orders", orders, settings=settings)
    [query] = planned.queries
    run_available(spark, query, spark_options(settings, kafka_bootstrap),
                  kafka_client_config(settings, kafka_bootstrap), tmp_path / "checkpoints", end_of_input=True)
    [sink] = planned.sink_topics
    actual = decode_output(admin.read_all(kafka_bootstrap, sink, settings=settings), planned.sink_serde(sink))
    problem = compare(list(CASE.expected), actual, False)
    assert not problem, problem
