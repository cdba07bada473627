"""Stream join benchmark: streamjoin against a hand-written PySpark job, same topics, same run.

  (a) enrichment: EVENTS click events (key = user id) LEFT JOIN a table of EVENTS/10 users;
      ksqlDB `LEFT JOIN` stream-table through our planner, vs. Spark reading the users topic as a
      static DataFrame (latest row per key) and the clicks with readStream (stream-static join).
  (b) interval: EVENTS/2 orders and EVENTS/2 payments over 10 hours of event time, keys drawn
      from EVENTS/10 ids (so ~1 match per order); ksqlDB `INNER JOIN ... WITHIN 1 HOURS`, vs.
      Spark's native stream-stream join (watermarks + a +/- 1 hour time-range condition).

Every job reads Kafka (availableNow) and writes Kafka with the streamjoin_kafka sink. Rates are
input records (both inputs) per second of the query's wall time, start-up included. Both jobs
must write the same number of records; both counts are printed.
Usage: python bench/stream_joins.py [--events N]   (default 750,000; full size: 1,000,000)
The full size took ~18 min here (2 cores shared, load 4-9): (a) ~10, (b) ~8 min, a third of it
producing the inputs; the default is scaled to fit ~15 min.
"""

from __future__ import annotations

import argparse
import random
import time

from common import (BASE_TS, Bench, Timed, bench_session, compile_query, create_topics, load_average,
                    produce, run_streamjoin, topic_count, warm_up)

FULL_EVENTS, DEFAULT_EVENTS = 1_000_000, 750_000
HOUR_MS = 3_600_000
SPAN_MS = 10 * HOUR_MS
PARTITIONS = 2  # one task per core


def source(bench: Bench, name: str, kind: str, columns: dict) -> dict:
    return dict(name=name, kind=kind, topic=bench.name(name), partitions=PARTITIONS, key=["id"],
                columns=columns, timestamp=None)


def kafka_stream(bench: Bench, topic: str):
    return (bench.spark.readStream.format("streamjoin_kafka")
            .option("kafka.bootstrap.servers", bench.bootstrap).option("subscribe", topic)
            .option("startingOffsets", "earliest").load())


def run_hand_written(bench: Bench, joined, topic: str, input_records: int) -> Timed:
    """`joined` (key, value, timestamp columns) written to a new topic, availableNow."""
    from streamjoin.kafka import admin

    admin.create_topics(bench.bootstrap, {topic: PARTITIONS})
    started = time.perf_counter()
    query = (joined.writeStream.format("streamjoin_kafka")
             .option("kafka.bootstrap.servers", bench.bootstrap).option("topic", topic)
             .option("checkpointLocation", str(bench.work_dir / "checkpoints" / topic))
             .trigger(availableNow=True).start())
    query.awaitTermination()
    return Timed(input_records, topic_count(bench, topic), time.perf_counter() - started)


# --- (a) stream-table enrichment ----------------------------------------------------------------

def enrichment(bench: Bench, events: int) -> tuple[Timed, Timed]:
    users, clicks = max(events // 10, 1), events
    sources = [source(bench, "clicks", "stream", {"id": "STRING", "amount": "BIGINT"}),
               source(bench, "users", "table", {"id": "STRING", "name": "STRING", "region": "STRING"})]
    queries, catalog = compile_query(
        f"CREATE STREAM {bench.name('enriched')} AS SELECT c.id AS id, c.amount AS amount, "
        f"u.name AS name, u.region AS region FROM clicks c LEFT JOIN users u ON c.id = u.id "
        f"EMIT CHANGES;", sources)
    create_topics(bench, queries)
    rng = random.Random(1)
    # The table first (earlier timestamps): every click finds its user, in both engines.
    produced = produce(bench, catalog, "users", ((f"u{n}", {"name": f"user {n}", "region": f"r{n % 50}"},
                                                  BASE_TS + n) for n in range(users)))
    produced += produce(bench, catalog, "clicks", ((f"u{rng.randrange(users)}", {"amount": n},
                                                    BASE_TS + users + n) for n in range(clicks)))
    print(f"(a) produced {users:,} users + {clicks:,} clicks")
    return both_engines(bench, queries, hand_written_enrichment(bench, sources), "enriched_spark", produced)


def both_engines(bench: Bench, queries, hand_written, output: str, produced: int):
    """streamjoin's run, then the hand-written job on the same topics: (streamjoin, hand-written)."""
    streamjoin, _ = run_streamjoin(bench, queries)
    check_read(streamjoin, produced)
    return streamjoin, run_hand_written(bench, hand_written, bench.name(output), produced)


def hand_written_enrichment(bench: Bench, sources: list[dict]):
    from pyspark.sql import functions as F

    clicks_topic, users_topic = (s["topic"] for s in sources)
    users_raw = (bench.spark.read.format("streamjoin_kafka")
                 .option("kafka.bootstrap.servers", bench.bootstrap).option("subscribe", users_topic).load())
    # A table is the latest record per key (one partition per key: the highest offset wins).
    users = (users_raw.groupBy("key").agg(F.max_by("value", "offset").alias("value"))
             .select(F.col("key").cast("string").alias("id"),
                     F.from_json(F.col("value").cast("string"), "NAME STRING, REGION STRING").alias("u"))
             .where("u IS NOT NULL").select("id", "u.NAME", "u.REGION"))
    clicks = kafka_stream(bench, clicks_topic).select(
        F.col("key").cast("string").alias("id"), "key", "timestamp",
        F.from_json(F.col("value").cast("string"), "AMOUNT BIGINT").AMOUNT.alias("AMOUNT"))
    return clicks.join(users, "id", "left").select(
        "key", "timestamp", F.to_json(F.struct("AMOUNT", "NAME", "REGION")).cast("binary").alias("value"))


# --- (b) stream-stream interval join ------------------------------------------------------------

def interval(bench: Bench, events: int) -> tuple[Timed, Timed]:
    per_side, ids = max(events // 2, 1), max(events // 10, 1)
    sources = [source(bench, "orders", "stream", {"id": "STRING", "v": "BIGINT"}),
               source(bench, "payments", "stream", {"id": "STRING", "v": "BIGINT"})]
    queries, catalog = compile_query(
        f"CREATE STREAM {bench.name('matched')} AS SELECT o.id AS id, o.v AS ov, p.v AS pv "
        f"FROM orders o INNER JOIN payments p WITHIN 1 HOURS ON o.id = p.id EMIT CHANGES;", sources)
    create_topics(bench, queries)
    rng = random.Random(2)
    step = SPAN_MS / (2 * per_side)  # orders and payments interleave, each side in time order
    produced = 0
    for name, offset in (("orders", 0), ("payments", 1)):
        produced += produce(bench, catalog, name, ((f"id{rng.randrange(ids)}", {"v": n},
                                                    BASE_TS + int((2 * n + offset) * step))
                                                   for n in range(per_side)))
    print(f"(b) produced {per_side:,} orders + {per_side:,} payments over 10 h, {ids:,} ids")
    return both_engines(bench, queries, hand_written_interval(bench, sources), "matched_spark", produced)


def hand_written_interval(bench: Bench, sources: list[dict]):
    from pyspark.sql import functions as F

    def side(topic: str, prefix: str):
        return (kafka_stream(bench, topic)
                .select(F.col("key").alias(f"{prefix}key"), F.col("timestamp").alias(f"{prefix}ts"),
                        F.from_json(F.col("value").cast("string"), "V BIGINT").V.alias(f"{prefix}v"))
                .withWatermark(f"{prefix}ts", "1 hour"))

    orders, payments = (side(s["topic"], p) for s, p in zip(sources, ("o_", "p_")))
    joined = orders.join(payments, F.expr(
        "o_key = p_key AND p_ts BETWEEN o_ts - INTERVAL 1 HOUR AND o_ts + INTERVAL 1 HOUR"))
    return joined.select(F.col("o_key").alias("key"), F.greatest("o_ts", "p_ts").alias("timestamp"),
                         F.to_json(F.struct(F.col("o_v").alias("OV"), F.col("p_v").alias("PV")))
                         .cast("binary").alias("value"))


# --- report ------------------------------------------------------------------------------------

def check_read(timed: Timed, produced: int) -> None:
    if timed.input_records != produced:
        raise RuntimeError(f"streamjoin read {timed.input_records:,} records, {produced:,} were produced")


def report(label: str, streamjoin: Timed, hand: Timed) -> None:
    same = "same" if streamjoin.output_records == hand.output_records else "DIFFERENT"
    print(f"{label}\n"
          f"  streamjoin:   {streamjoin.rate:>9,.0f} events/s  ({streamjoin.input_records:,} in, "
          f"{streamjoin.output_records:,} out, {streamjoin.seconds:,.1f} s)\n"
          f"  hand-written: {hand.rate:>9,.0f} events/s  ({hand.input_records:,} in, "
          f"{hand.output_records:,} out, {hand.seconds:,.1f} s)\n"
          f"  ratio streamjoin/hand-written: {streamjoin.rate / hand.rate:.2f}; "
          f"output counts {same} ({streamjoin.output_records:,} vs {hand.output_records:,})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS,
                        help="(a) stream events (table: events/10 keys); (b) events over both sides")
    parser.add_argument("--only", choices=("a", "b"), help="run one of the two benchmarks")
    args = parser.parse_args()
    with bench_session("streamjoin-bench-stream-joins") as bench:
        print(f"broker {bench.bootstrap}; {PARTITIONS} partitions per topic; {load_average()}")
        if args.events < FULL_EVENTS:
            print(f"scaled: {args.events:,} events (full size {FULL_EVENTS:,}: --events {FULL_EVENTS}; "
                  f"it took ~18 min on 2 shared cores, over the ~15 min budget)")
        warm_up(bench)
        if args.only in (None, "a"):
            report(f"(a) stream-table LEFT JOIN enrichment, {args.events:,} events x "
                   f"{max(args.events // 10, 1):,}-key table", *enrichment(bench, args.events))
        if args.only in (None, "b"):
            report(f"(b) stream-stream INNER JOIN WITHIN 1 HOURS, 2 x {args.events // 2:,} events",
                   *interval(bench, args.events))
        print(f"done; {load_average()}")


if __name__ == "__main__":
    main()
