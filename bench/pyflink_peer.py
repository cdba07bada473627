"""The PyFlink peer of bench/stream_joins.py: the same two joins in Flink SQL, streaming mode.

Runs under the bench-only virtualenv .venv-flink (apache-flink pins py4j, pandas and pyarrow
versions that clash with pyspark's; see bench/README.md), so it imports nothing from streamjoin.
No Flink Kafka connector jar can be downloaded here (no Maven), so it reads the SAME records the
bench produced to Kafka from JSON-lines files, one file per Kafka partition, each in the order
it was produced (lines: {"key": ..., "value": {...}, "ts": epoch ms}):

  enrichment: <input>/clicks/*.jsonl  (value: {"amount"})  LEFT JOIN  <input>/users/*.jsonl  (value: {"name", "region"})
  interval:   <input>/orders/*.jsonl  (value: {"v"})  INNER JOIN  <input>/payments/*.jsonl  (value: {"v"})

writes the joined rows as JSON lines under <output>/, and prints one JSON line on stdout:
{"rate", "records_in", "records_out", "seconds", "startup_seconds"}. `seconds` is the job's wall
time from submission to the end of input (the Flink mini-cluster's start-up included, like
the Spark rates include query start-up); the Python gateway JVM's start is `startup_seconds`.

Usage: .venv-flink/bin/python bench/pyflink_peer.py {enrichment|interval} INPUT_DIR OUTPUT_DIR [--parallelism 2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# Event time is the record timestamp, as in the Kafka records (epoch ms -> TIMESTAMP_LTZ).
ROWTIME = "`rowtime` AS TO_TIMESTAMP_LTZ(`ts`, 3)"
# The same watermark delay as the hand-written PySpark interval job (withWatermark 1 hour). Each
# file is in time order; a reader that is handed a second file after finishing one has already
# advanced its watermark past that file's rows (so Flink drops them as late): with one file per
# partition and a reader per partition (parallelism = partitions) it should not happen here, and
# the bench prints the output counts of every engine either way.
WATERMARK = "WATERMARK FOR `rowtime` AS `rowtime` - INTERVAL '1' HOUR"


def source(name: str, directory: Path, value_fields: str) -> str:
    return (f"CREATE TABLE `{name}` (`key` STRING, `value` ROW<{value_fields}>, `ts` BIGINT, {ROWTIME}, "
            f"{WATERMARK}) WITH ('connector' = 'filesystem', 'path' = 'file://{directory}', "
            f"'format' = 'json', 'json.fail-on-missing-field' = 'false')")


def sink(name: str, directory: Path, columns: str) -> str:
    return (f"CREATE TABLE `{name}` ({columns}) WITH ('connector' = 'filesystem', "
            f"'path' = 'file://{directory}', 'format' = 'json')")


def enrichment(env, input_dir: Path, output_dir: Path):
    env.execute_sql(source("clicks", input_dir / "clicks", "`amount` BIGINT"))
    env.execute_sql(source("users", input_dir / "users", "`name` STRING, `region` STRING"))
    # The users table as a versioned view: the latest row per key (Flink infers the primary key
    # of a deduplication query), so the join below is an event-time temporal join.
    env.execute_sql("CREATE TEMPORARY VIEW users_latest AS SELECT `key`, `value`, `rowtime` FROM ("
                    "SELECT *, ROW_NUMBER() OVER (PARTITION BY `key` ORDER BY `rowtime` DESC) AS rn FROM users) "
                    "WHERE rn = 1")
    env.execute_sql(sink("enriched", output_dir, "`key` STRING, `amount` BIGINT, `name` STRING, "
                                                 "`region` STRING, `ts` BIGINT"))
    # Why a temporal join (FOR SYSTEM_TIME AS OF the click's time), not a regular LEFT JOIN:
    # ksqlDB's stream-table join looks each click up in the table as of that click and never
    # revises its output; Flink's event-time temporal join has exactly those semantics and emits
    # an append-only stream. A regular LEFT JOIN would emit (click, NULL) for clicks read before
    # their user and retract it later: an updating stream (the file sink refuses it) whose final
    # state, not whose output, matches. Every user row is older than every click here, so the
    # temporal join's result is ours row for row. (A lookup join needs a lookup connector: JDBC,
    # HBase..., none of which is available here.)
    return env.execute_sql(
        "INSERT INTO enriched SELECT c.`key`, c.`value`.`amount`, u.`value`.`name`, u.`value`.`region`, c.`ts` "
        "FROM clicks AS c LEFT JOIN users_latest FOR SYSTEM_TIME AS OF c.`rowtime` AS u ON c.`key` = u.`key`")


def interval(env, input_dir: Path, output_dir: Path):
    env.execute_sql(source("orders", input_dir / "orders", "`v` BIGINT"))
    env.execute_sql(source("payments", input_dir / "payments", "`v` BIGINT"))
    env.execute_sql(sink("matched", output_dir, "`key` STRING, `ov` BIGINT, `pv` BIGINT, `ts` BIGINT"))
    # An interval join (ksqlDB's WITHIN 1 HOURS: |o.ts - p.ts| <= 1 hour), state kept until the
    # watermark passes the interval; output time = the later input, as ours.
    return env.execute_sql(
        "INSERT INTO matched SELECT o.`key`, o.`value`.`v`, p.`value`.`v`, GREATEST(o.`ts`, p.`ts`) "
        "FROM orders AS o, payments AS p WHERE o.`key` = p.`key` "
        "AND p.`rowtime` BETWEEN o.`rowtime` - INTERVAL '1' HOUR AND o.`rowtime` + INTERVAL '1' HOUR")


INPUTS = {"enrichment": ("clicks", "users"), "interval": ("orders", "payments")}


def count_lines(directory: Path) -> int:
    """Lines of the committed files (the file sink's in-progress files start with a dot)."""
    total = 0
    for path in directory.rglob("*"):
        if path.is_file() and not path.name.startswith("."):
            with path.open("rb") as f:
                total += sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", choices=sorted(INPUTS))
    parser.add_argument("input_dir", type=Path)
    parser.add_argument("output_dir", type=Path)
    parser.add_argument("--parallelism", type=int, default=2, help="one subtask per core (and per partition)")
    args = parser.parse_args()
    input_dir, output_dir = args.input_dir.resolve(), args.output_dir.resolve()
    records_in = sum(count_lines(input_dir / name) for name in INPUTS[args.workload])

    started = time.perf_counter()
    from pyflink.table import EnvironmentSettings, TableEnvironment

    env = TableEnvironment.create(EnvironmentSettings.in_streaming_mode())
    config = env.get_config()
    config.set("parallelism.default", str(args.parallelism))
    # No checkpoints: Flink's file sink still commits every file when the bounded input ends
    # (checked: the counts match), and periodic checkpoints would snapshot the join state every
    # interval, which the Spark jobs (one checkpoint per micro-batch) do not pay either.
    config.set("pipeline.name", f"bench-{args.workload}")
    startup = time.perf_counter() - started

    started = time.perf_counter()
    result = (enrichment if args.workload == "enrichment" else interval)(env, input_dir, output_dir)
    result.wait()
    seconds = time.perf_counter() - started
    records_out = count_lines(output_dir)
    json.dump({"rate": records_in / seconds, "records_in": records_in, "records_out": records_out,
               "seconds": seconds, "startup_seconds": startup}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
