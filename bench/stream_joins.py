"""Stream join benchmark: streamjoin against a hand-written PySpark job and PyFlink, same records.

  (a) enrichment: EVENTS click events (key = user id) LEFT JOIN a table of EVENTS/10 users;
      ksqlDB `LEFT JOIN` stream-table through our planner, vs. Spark reading the users topic as a
      static DataFrame (latest row per key) and the clicks with readStream (stream-static join),
      vs. Flink SQL's event-time temporal join on the latest row per user (bench/pyflink_peer.py).
  (b) interval: EVENTS/2 orders and EVENTS/2 payments over 10 hours of event time, keys drawn
      from EVENTS/10 ids (so ~1 match per order); ksqlDB `INNER JOIN ... WITHIN 1 HOURS`, vs.
      Spark's native stream-stream join (watermarks + a +/- 1 hour time-range condition), vs.
      Flink SQL's interval join.

All three read the same Kafka topics and write a Kafka topic. streamjoin runs availableNow with
the Kafka source STREAMJOIN_KAFKA_SOURCE names (by default Spark's own connector, or
streamjoin_kafka); the hand-written job uses Spark's own connector (`format("kafka")`, a JVM client); PyFlink uses
Flink's Kafka connector (a bounded scan up to the offsets at its start) in streaming mode, under
its own virtualenv (.venv-flink; skipped with a note when missing). Rates are input records
(both inputs) per second of the query's wall time, start-up included; every ratio is printed.
streamjoin runs a second time with a Delta output beside its topic, as the CLI and the Dagster
assets run every query (delta-spark writing from the executors); its output count is the table's.

Checks on every run: streamjoin's output == the same compiled query run in batch mode over the
same inputs (multisets of key and value); the output counts of all three engines (and
streamjoin's rows against PyFlink's), printed plainly when they differ. Also printed: the peak
RSS of Spark's Python workers during each Spark job, and where streamjoin's time went.
Usage: python bench/stream_joins.py [--events N] [--only a|b]   (default 500,000; full size: 1,000,000)
Scaled to fit ~15 min on a quiet machine: at the full size the two Spark jobs alone took ~18 min
here (2 cores shared, load 4-9); the batch check adds ~half of streamjoin's run, PyFlink about
its own. 200,000 events took 11.4 min at load ~17 (other engineers' tests).
"""

from __future__ import annotations

import argparse
import random
import time
from dataclasses import dataclass
from typing import Literal

from common import (BASE_TS, Agreement, Bench, StateSize, Timed, WorkerMemory, bench_session, compile_query,
                    create_topics, json_rows, load_average, output_records, print_profile, produce,
                    row_differences, run_pyflink, run_streamjoin, measured_streamjoin, streaming_vs_batch,
                    topic_count, warm_up, warm_up_source)

FULL_EVENTS, DEFAULT_EVENTS = 1_000_000, 500_000
HOUR_MS = 3_600_000
SPAN_MS = 10 * HOUR_MS
PARTITIONS = 2  # one task per core


def source(bench: Bench, name: str, kind: str, columns: dict, tag: str = "") -> dict:
    """A source declaration; its topic is the run's, with `tag` for another copy in the run."""
    return dict(name=name, kind=kind, topic=bench.name(name + tag), partitions=PARTITIONS, key=["id"],
                columns=columns, timestamp=None)


# The hand-written job reads and writes with Spark's own Kafka connector (a JVM client), as a team
# on a Spark cluster would; `streamjoin_kafka` is streamjoin's Python source and sink.
Connector = Literal["kafka", "streamjoin_kafka"]
HAND_WRITTEN: Connector = "kafka"


def kafka_stream(bench: Bench, topic: str, connector: Connector = HAND_WRITTEN, options: dict | None = None):
    return (bench.spark.readStream.format(connector)
            .option("kafka.bootstrap.servers", bench.bootstrap).option("subscribe", topic)
            .option("startingOffsets", "earliest").options(**(options or {})).load())


def run_hand_written(bench: Bench, joined, topic: str, input_records: int,
                     connector: Connector = HAND_WRITTEN) -> Timed:
    """`joined` (key, value, timestamp columns) written to a new topic, availableNow. Spark's
    sink takes no timestamp column: its records are stamped when produced."""
    from streamjoin.kafka import admin

    admin.create_topics(bench.bootstrap, {topic: PARTITIONS})
    if connector == "kafka":
        joined = joined.select("key", "value")
    started = time.perf_counter()
    query = (joined.writeStream.format(connector)
             .option("kafka.bootstrap.servers", bench.bootstrap).option("topic", topic)
             .option("checkpointLocation", str(bench.work_dir / "checkpoints" / topic))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return Timed(input_records, topic_count(bench, topic), time.perf_counter() - started)


@dataclass
class Workload:
    """One workload's runs: the three engines, the checks, the Python workers' memory."""

    streamjoin: Timed
    streamjoin_memory: WorkerMemory
    state: StateSize  # the streamjoin run's tasks' state, as last committed
    hand: Timed
    hand_memory: WorkerMemory
    batch: Agreement
    flink: Timed | str  # or why it did not run
    rows: str  # the other engines' output rows against streamjoin's
    with_delta: Timed  # streamjoin's run with a Delta output too (its output count: the table's rows)
    delta_memory: WorkerMemory


# --- (a) stream-table enrichment ----------------------------------------------------------------

@dataclass(frozen=True)
class Inputs:
    """A workload's compiled query, its input topics as produced, and what was produced."""

    queries: list
    sources: list[dict]
    produced: int

    @property
    def topics(self) -> list[str]:
        return [s["topic"] for s in self.sources]


def enrichment_inputs(bench: Bench, events: int, table_keys: int | None = None, tag: str = "") -> Inputs:
    """`events` clicks over a table of `table_keys` users (default events/10), table first; the
    topics' names end in `tag`."""
    users, clicks = table_keys or max(events // 10, 1), events
    sources = [source(bench, "clicks", "stream", {"id": "STRING", "amount": "BIGINT"}, tag),
               source(bench, "users", "table", {"id": "STRING", "name": "STRING", "region": "STRING"}, tag)]
    queries, catalog = compile_query(
        f"CREATE STREAM {bench.name('enriched' + tag)} AS SELECT c.id AS id, c.amount AS amount, "
        f"u.name AS name, u.region AS region FROM clicks c LEFT JOIN users u ON c.id = u.id "
        f"EMIT CHANGES;", sources)
    create_topics(bench, queries)
    rng, started = random.Random(1), time.perf_counter()
    # The table first (earlier timestamps): every click finds its user, in every engine.
    produced = produce(bench, catalog, "users", ((f"u{n}", {"name": f"user {n}", "region": f"r{n % 50}"},
                                                  BASE_TS + n) for n in range(users)))
    produced += produce(bench, catalog, "clicks", ((f"u{rng.randrange(users)}", {"amount": n},
                                                    BASE_TS + users + n) for n in range(clicks)))
    print(f"(a) produced {users:,} users + {clicks:,} clicks in {time.perf_counter() - started:,.1f} s")
    return Inputs(queries, sources, produced)


def enrichment(bench: Bench, events: int) -> Workload:
    inputs = enrichment_inputs(bench, events)
    return all_engines(bench, inputs, hand_written_enrichment(bench, inputs.sources), "enriched", "enrichment")


def all_engines(bench: Bench, inputs: Inputs, hand_written, output: str, workload: str) -> Workload:
    """streamjoin's run, the hand-written job on the same topics, streamjoin's query again in batch
    mode, then PyFlink on the same topics; every engine's output rows; last, streamjoin's run
    again with a Delta output beside its topic (after the comparisons: it writes the topic again)."""
    queries, produced = inputs.queries, inputs.produced
    ours = measured_streamjoin(bench, queries)
    check_read(ours.timed, produced)
    with WorkerMemory() as hand_memory:
        hand = run_hand_written(bench, hand_written, bench.name(f"{output}_spark"), produced)
    batch = streaming_vs_batch(bench, queries)
    flink = run_pyflink(bench, workload, inputs.topics, bench.name(f"{output}_flink"), produced)
    # The rows without their timestamps (each engine stamps its own way; the counts and the
    # streaming == batch check cover the rest).
    streamed = batch.streaming if len(queries) == 1 else output_records(bench, queries[-1].sink.topic)
    rows = {"streamjoin": json_rows(streamed),
            "hand-written PySpark": json_rows(output_records(bench, bench.name(f"{output}_spark")))}
    if isinstance(flink, Timed):
        rows["PyFlink"] = json_rows(output_records(bench, bench.name(f"{output}_flink")))
    differences = row_differences(rows)
    with WorkerMemory() as delta_memory:
        with_delta, _ = run_streamjoin(bench, queries, delta=bench.work_dir / "delta" / output)
    check_read(with_delta, produced)
    return Workload(ours.timed, ours.memory, ours.state, hand, hand_memory, batch, flink, differences,
                    with_delta, delta_memory)


def hand_written_enrichment(bench: Bench, sources: list[dict]):
    # The values are JSON objects keyed by the declared column names, as the bench's serde writes
    # them; Spark's from_json matches field names case-sensitively (a wrong case reads nulls).
    from pyspark.sql import functions as F

    clicks_topic, users_topic = (s["topic"] for s in sources)
    users_raw = (bench.spark.read.format(HAND_WRITTEN)
                 .option("kafka.bootstrap.servers", bench.bootstrap).option("subscribe", users_topic).load())
    # A table is the latest record per key (one partition per key: the highest offset wins).
    users = (users_raw.groupBy("key").agg(F.max_by("value", "offset").alias("value"))
             .select(F.col("key").cast("string").alias("id"),
                     F.from_json(F.col("value").cast("string"), "name STRING, region STRING").alias("u"))
             .where("u IS NOT NULL").select("id", "u.name", "u.region"))
    clicks = kafka_stream(bench, clicks_topic).select(
        F.col("key").cast("string").alias("id"), "key", "timestamp",
        F.from_json(F.col("value").cast("string"), "amount BIGINT").amount.alias("amount"))
    return clicks.join(users, "id", "left").select(
        "key", "timestamp", F.to_json(F.struct("amount", "name", "region")).cast("binary").alias("value"))


# --- (b) stream-stream interval join ------------------------------------------------------------

def interval_inputs(bench: Bench, events: int, tag: str = "") -> Inputs:
    """`events` orders and payments, half each, over 10 hours of event time, events/10 ids; the
    topics' names end in `tag`."""
    per_side, ids = max(events // 2, 1), max(events // 10, 1)
    sources = [source(bench, "orders", "stream", {"id": "STRING", "v": "BIGINT"}, tag),
               source(bench, "payments", "stream", {"id": "STRING", "v": "BIGINT"}, tag)]
    queries, catalog = compile_query(
        f"CREATE STREAM {bench.name('matched' + tag)} AS SELECT o.id AS id, o.v AS ov, p.v AS pv "
        f"FROM orders o INNER JOIN payments p WITHIN 1 HOURS ON o.id = p.id EMIT CHANGES;", sources)
    create_topics(bench, queries)
    rng = random.Random(2)
    step = SPAN_MS / (2 * per_side)  # orders and payments interleave, each side in time order
    produced, started = 0, time.perf_counter()
    for name, offset in (("orders", 0), ("payments", 1)):
        produced += produce(bench, catalog, name, ((f"id{rng.randrange(ids)}", {"v": n},
                                                    BASE_TS + int((2 * n + offset) * step))
                                                   for n in range(per_side)))
    print(f"(b) produced {per_side:,} orders + {per_side:,} payments over 10 h, {ids:,} ids, in "
          f"{time.perf_counter() - started:,.1f} s")
    return Inputs(queries, sources, produced)


def interval(bench: Bench, events: int) -> Workload:
    inputs = interval_inputs(bench, events)
    return all_engines(bench, inputs, hand_written_interval(bench, inputs.sources), "matched", "interval")


def hand_written_interval(bench: Bench, sources: list[dict]):
    from pyspark.sql import functions as F

    def side(topic: str, prefix: str):
        return (kafka_stream(bench, topic)
                .select(F.col("key").alias(f"{prefix}key"), F.col("timestamp").alias(f"{prefix}ts"),
                        F.from_json(F.col("value").cast("string"), "v BIGINT").v.alias(f"{prefix}v"))
                .withWatermark(f"{prefix}ts", "1 hour"))

    orders, payments = (side(s["topic"], p) for s, p in zip(sources, ("o_", "p_")))
    joined = orders.join(payments, F.expr(
        "o_key = p_key AND p_ts BETWEEN o_ts - INTERVAL 1 HOUR AND o_ts + INTERVAL 1 HOUR"))
    return joined.select(F.col("o_key").alias("key"), F.greatest("o_ts", "p_ts").alias("timestamp"),
                         F.to_json(F.struct(F.col("o_v").alias("ov"), F.col("p_v").alias("pv")))
                         .cast("binary").alias("value"))


# --- report ------------------------------------------------------------------------------------

def check_read(timed: Timed, produced: int) -> None:
    if timed.input_records != produced:
        raise RuntimeError(f"streamjoin read {timed.input_records:,} records, {produced:,} were produced")


def report(label: str, result: Workload) -> None:
    engines = {"streamjoin": result.streamjoin, "hand-written PySpark": result.hand,
               "streamjoin + Delta": result.with_delta}
    if isinstance(result.flink, Timed):
        engines["PyFlink"] = result.flink
    print(label)
    for name, timed in engines.items():
        print(f"  {name + ':':<22}{timed.rate:>9,.0f} events/s  ({timed.input_records:,} in, "
              f"{timed.output_records:,} out, {timed.seconds:,.1f} s)")
    if not isinstance(result.flink, Timed):
        print(f"  {'PyFlink:':<22}{result.flink}")
    names = list(engines)
    print("  ratios: " + "; ".join(f"{a}/{b} {engines[a].rate / engines[b].rate:.2f}"
                                   for i, a in enumerate(names) for b in names[i + 1:]))
    counts = {name: timed.output_records for name, timed in engines.items()}
    agree = "agree" if len(set(counts.values())) == 1 else "DIFFER"
    print(f"  output counts {agree}: " + ", ".join(f"{name} {count:,}" for name, count in counts.items())
          + f"; {result.rows}")
    print(f"  {result.batch.line()}")
    print(f"  streamjoin run: {result.streamjoin_memory.line()}")
    print(f"  streamjoin run's {result.state.line()}")
    print(f"  hand-written run: {result.hand_memory.line()}")
    print(f"  streamjoin + Delta run: {result.delta_memory.line()}")
    print_profile(result.streamjoin.profile or {})
    print("  with a Delta output:")
    print_profile(result.with_delta.profile or {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS,
                        help="(a) stream events (table: events/10 keys); (b) events over both sides")
    parser.add_argument("--only", choices=("a", "b"), help="run one of the two benchmarks")
    args = parser.parse_args()
    with bench_session("streamjoin-bench-stream-joins") as bench:
        from streamjoin.settings import Settings

        print(f"broker {bench.bootstrap}; {PARTITIONS} partitions per topic; streamjoin reads with "
              f"{Settings.from_env().kafka_source.value!r} (STREAMJOIN_KAFKA_SOURCE); {load_average()}")
        if args.events < FULL_EVENTS:
            print(f"scaled: {args.events:,} events (full size {FULL_EVENTS:,}: --events {FULL_EVENTS}; "
                  f"its Spark jobs alone took ~18 min on 2 shared cores, over the ~15 min budget)")
        warm_up(bench)
        warm_up_source(bench)
        if args.only in (None, "a"):
            report(f"(a) stream-table LEFT JOIN enrichment, {args.events:,} events x "
                   f"{max(args.events // 10, 1):,}-key table", enrichment(bench, args.events))
        if args.only in (None, "b"):
            report(f"(b) stream-stream INNER JOIN WITHIN 1 HOURS, 2 x {args.events // 2:,} events",
                   interval(bench, args.events))
        print(f"done; {load_average()}")


if __name__ == "__main__":
    main()
