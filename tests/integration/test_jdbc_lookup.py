"""Flink's lookup join against a real PostgreSQL (tests/integration/postgres.py starts its own):
a Kafka orders stream joined `FOR SYSTEM_TIME AS OF o.proc_time` with a `'connector' = 'jdbc'`
customers table, run by Spark (the lookups made in the tasks, through psycopg), results read
back from Kafka. A LEFT join pads an order whose customer the table does not hold with NULLs;
the INNER join drops it.

Mid-run change: between two runs of the same query (one checkpoint), a customer is renamed and
the missing one is inserted. The table declares a 10-minute cache (expire after write), yet the
second run's orders see the new rows: a task's cache lives at most one micro-batch (a task is
restored from its checkpoint at each batch, without cache), so the TTL bounds staleness within a
batch only; the first run's results are not touched (a lookup join never retracts)."""

from __future__ import annotations

import contextlib
import uuid

import pytest

from streamjoin.kafka import admin
from streamjoin.kafka.client import kafka_client_config, spark_options
from streamjoin.kafka.records import place
from streamjoin.runner.cases import Case, InputRecord
from streamjoin.runner.planned import plan_case
from streamjoin.runner.wire import decode_output
from streamjoin.settings import Settings
from streamjoin.spark.query import run_available
from tests.integration.postgres import running_postgres

ORDERS = """CREATE TABLE orders (order_id STRING, customer_id INT, amount INT, proc_time AS PROCTIME())
  WITH ('connector' = 'kafka', 'topic' = 'orders', 'value.format' = 'json',
        'scan.startup.mode' = 'earliest-offset')"""
CUSTOMERS = """CREATE TABLE customers (id INT, name STRING, country STRING, PRIMARY KEY (id) NOT ENFORCED)
  WITH ('connector' = 'jdbc', 'url' = '{url}', 'table-name' = 'public.customers',
        'username' = '{user}', 'password' = '{password}',
        'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '100',
        'lookup.partial-cache.expire-after-write' = '10 min')"""
QUERIES = """
SELECT o.order_id, o.amount, c.name, c.country
FROM orders AS o LEFT JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c ON o.customer_id = c.id;
SELECT o.order_id, c.name
FROM orders AS o JOIN customers FOR SYSTEM_TIME AS OF o.proc_time AS c ON o.customer_id = c.id;
"""
FIRST = [("o1", 1), ("o2", 2), ("o3", 3), ("o4", 1)]
SECOND = [("o5", 1), ("o6", 3)]


def orders(planned, rows, start: int) -> list:
    records = [InputRecord.from_json({"source": "orders", "value": {"order_id": o, "customer_id": c, "amount": 10},
                                      "ts": 1_000 * (start + i)}) for i, (o, c) in enumerate(rows)]
    return [place(*planned.input_target(r), sequence=start + i).record for i, r in enumerate(records)]


@pytest.fixture
def postgres():
    stack = contextlib.ExitStack()
    try:
        pg = stack.enter_context(running_postgres())
    except RuntimeError as error:
        pytest.fail(str(error), pytrace=False)
    with stack:
        yield pg


@pytest.mark.integration
def test_lookup_join_against_postgres(spark, kafka_bootstrap, tmp_path, postgres):
    with postgres.connect() as server:
        server.execute("CREATE DATABASE shop")
    with postgres.connect("shop") as db:
        db.execute("CREATE TABLE customers (id INT PRIMARY KEY, name TEXT, country TEXT)")
        db.execute("INSERT INTO customers VALUES (1, 'Ann', 'NL'), (2, 'Bob', 'DE')")
        run_twice(spark, kafka_bootstrap, tmp_path, postgres, db)


def run_twice(spark, kafka_bootstrap, tmp_path, pg, db) -> None:
    customers = CUSTOMERS.format(url=pg.jdbc_url("shop"), user=pg.user, password=pg.password)
    case = Case("jdbc-lookup", "flink", QUERIES, setup=(ORDERS, customers))
    settings = Settings.from_env()
    prefix = f"sj-jdbc-{uuid.uuid4().hex[:8]}."
    planned = plan_case(case, topic_prefix=prefix)
    admin.create_topics(kafka_bootstrap, planned.topic_partitions, settings=settings)
    options, config = spark_options(settings, kafka_bootstrap), kafka_client_config(settings, kafka_bootstrap)

    def run(rows, start) -> list[dict]:
        admin.produce(kafka_bootstrap, prefix + "orders", orders(planned, rows, start), settings=settings)
        for query in planned.queries:
            run_available(spark, query, options, config, tmp_path / query.sink.topic, end_of_input=False)
        return [[r.value for r in decode_output(admin.read_all(kafka_bootstrap, topic, settings=settings),
                                                planned.sink_serde(topic))] for topic in planned.sink_topics]

    left, inner = run(FIRST, 0)
    assert left == [{"order_id": "o1", "amount": 10, "name": "Ann", "country": "NL"},
                    {"order_id": "o2", "amount": 10, "name": "Bob", "country": "DE"},
                    {"order_id": "o3", "amount": 10, "name": None, "country": None},  # not in the table
                    {"order_id": "o4", "amount": 10, "name": "Ann", "country": "NL"}]
    assert inner == [{"order_id": "o1", "name": "Ann"}, {"order_id": "o2", "name": "Bob"},
                     {"order_id": "o4", "name": "Ann"}]
    db.execute("UPDATE customers SET name = 'Ann B' WHERE id = 1")
    db.execute("INSERT INTO customers VALUES (3, 'Cat', 'FR')")
    left, inner = run(SECOND, len(FIRST))
    assert left[len(FIRST):] == [{"order_id": "o5", "amount": 10, "name": "Ann B", "country": "NL"},
                                 {"order_id": "o6", "amount": 10, "name": "Cat", "country": "FR"}]
    assert left[2]["name"] is None and inner[3:] == [{"order_id": "o5", "name": "Ann B"},
                                                     {"order_id": "o6", "name": "Cat"}]
