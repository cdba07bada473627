"""The PyFlink peer of bench/stream_joins.py: the same two joins in Flink SQL, streaming mode,
reading the bench's Kafka topics with Flink's own Kafka connector and writing its results to a
Kafka topic, as the Spark jobs do.

Runs under the bench-only virtualenv .venv-flink (apache-flink pins py4j, pandas and pyarrow
versions that clash with pyspark's; see bench/README.md), so it imports nothing from streamjoin:
the bench resolves Flink's Kafka connector jar from Maven Central (`streamjoin.maven`) and passes
its path. The inputs are read from their earliest offsets up to the offsets they have when the
job starts (a bounded Kafka scan), so the job ends when it has read what the bench produced:

  enrichment: clicks topic (value {"amount"})  LEFT JOIN  users topic (value {"name", "region"})
  interval:   orders topic (value {"v"})  INNER JOIN  payments topic (value {"v"})

Keys are the raw UTF-8 key bytes, values JSON, event time the Kafka record timestamp. Prints one
JSON line on stdout: {"seconds", "startup_seconds"}. `seconds` is the job's wall time from
submission to the end of its input (the Flink mini-cluster's start-up included, as the Spark
rates include query start-up); the Python gateway JVM's start is `startup_seconds`.

Usage: .venv-flink/bin/python bench/pyflink_peer.py {enrichment|interval} --bootstrap HOST:PORT
         --inputs TOPIC,TOPIC --output TOPIC --jars JAR[,JAR] [--parallelism 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# The same watermark delay as the hand-written PySpark interval job (withWatermark 1 hour).
WATERMARK = "WATERMARK FOR `rowtime` AS `rowtime` - INTERVAL '1' HOUR"
KEY_AND_JSON = ("'key.format' = 'raw', 'key.fields' = 'key', 'value.format' = 'json', "
                "'value.fields-include' = 'EXCEPT_KEY'")


def kafka(topic: str, bootstrap: str) -> str:
    return f"'connector' = 'kafka', 'topic' = '{topic}', 'properties.bootstrap.servers' = '{bootstrap}', {KEY_AND_JSON}"


def source(name: str, topic: str, bootstrap: str, value_columns: str) -> str:
    return (f"CREATE TABLE `{name}` (`key` STRING, {value_columns}, "
            f"`rowtime` TIMESTAMP_LTZ(3) METADATA FROM 'timestamp' VIRTUAL, {WATERMARK}) WITH ("
            f"{kafka(topic, bootstrap)}, 'properties.group.id' = 'bench-pyflink-{name}', "
            f"'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', "
            f"'value.json.fail-on-missing-field' = 'false')")


def sink(name: str, topic: str, bootstrap: str, columns: str) -> str:
    return (f"CREATE TABLE `{name}` (`key` STRING, {columns}) WITH ({kafka(topic, bootstrap)}, "
            f"'sink.delivery-guarantee' = 'at-least-once')")


def enrichment(env, inputs: list[str], output: str, bootstrap: str):
    clicks, users = inputs
    env.execute_sql(source("clicks", clicks, bootstrap, "`amount` BIGINT"))
    env.execute_sql(source("users", users, bootstrap, "`name` STRING, `region` STRING"))
    # The users table as a versioned view: the latest row per key (Flink infers the primary key
    # of a deduplication query), so the join below is an event-time temporal join.
    env.execute_sql("CREATE TEMPORARY VIEW users_latest AS SELECT `key`, `name`, `region`, `rowtime` FROM ("
                    "SELECT *, ROW_NUMBER() OVER (PARTITION BY `key` ORDER BY `rowtime` DESC) AS rn FROM users) "
                    "WHERE rn = 1")
    env.execute_sql(sink("enriched", output, bootstrap, "`amount` BIGINT, `name` STRING, `region` STRING"))
    # Why a temporal join (FOR SYSTEM_TIME AS OF the click's time), not a regular LEFT JOIN:
    # ksqlDB's stream-table join looks each click up in the table as of that click and never
    # revises its output; Flink's event-time temporal join has exactly those semantics and emits
    # an append-only stream. A regular LEFT JOIN would emit (click, NULL) for clicks read before
    # their user and retract it later: an updating stream (an append Kafka sink refuses it)
    # whose final state, not whose output, matches. Every user row is older than every click
    # here, so the temporal join's result is ours row for row.
    return env.execute_sql(
        "INSERT INTO enriched SELECT c.`key`, c.`amount`, u.`name`, u.`region` "
        "FROM clicks AS c LEFT JOIN users_latest FOR SYSTEM_TIME AS OF c.`rowtime` AS u ON c.`key` = u.`key`")


def interval(env, inputs: list[str], output: str, bootstrap: str):
    orders, payments = inputs
    env.execute_sql(source("orders", orders, bootstrap, "`v` BIGINT"))
    env.execute_sql(source("payments", payments, bootstrap, "`v` BIGINT"))
    env.execute_sql(sink("matched", output, bootstrap, "`ov` BIGINT, `pv` BIGINT"))
    # An interval join (ksqlDB's WITHIN 1 HOURS: |o.ts - p.ts| <= 1 hour), state kept until the
    # watermark passes the interval.
    return env.execute_sql(
        "INSERT INTO matched SELECT o.`key`, o.`v`, p.`v` FROM orders AS o, payments AS p WHERE o.`key` = p.`key` "
        "AND p.`rowtime` BETWEEN o.`rowtime` - INTERVAL '1' HOUR AND o.`rowtime` + INTERVAL '1' HOUR")


WORKLOADS = {"enrichment": enrichment, "interval": interval}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(WORKLOADS))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--inputs", required=True, help="the two input topics, comma-separated, in the join's order")
    parser.add_argument("--output", required=True)
    parser.add_argument("--jars", required=True, help="Flink's Kafka connector jar(s), comma-separated")
    parser.add_argument("--parallelism", type=int, default=2, help="one subtask per core (and per partition)")
    args = parser.parse_args()

    started = time.perf_counter()
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", str(args.parallelism))
    config.set("pipeline.jars", ";".join(Path(jar).resolve().as_uri() for jar in args.jars.split(",")))
    # No checkpoints: the at-least-once Kafka sink flushes when the bounded input ends, and
    # periodic checkpoints would snapshot the join state every interval, which the Spark jobs
    # (one checkpoint per micro-batch) do not pay either.
    config.set("pipeline.name", f"bench-{args.workload}")
    startup = time.perf_counter() - started

    started = time.perf_counter()
    WORKLOADS[args.workload](env, args.inputs.split(","), args.output, args.bootstrap).wait()
    json.dump({"seconds": time.perf_counter() - started, "startup_seconds": startup}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
