"""Latency benchmark: produce -> output latency of a continuous streamjoin query.

The query is a stream-table enrichment (ksqlDB `clicks LEFT JOIN users`, USERS-key table loaded
first) running under a processing-time trigger (`StreamingRun.start(..., {"processingTime":
INTERVAL})`) on the bench's private broker, Kafka to Kafka. Then:

  idle:   the CPU the bench's processes use over 5 s with no input (the trigger's polling);
  steady: a producer process sends RATE clicks/s for SECONDS s (each record's Kafka timestamp =
          its produce time, ms); a consumer process reads the output topic. A stream-table join's
          output keeps the stream record's timestamp, so latency = the time the consumer sees an
          output record - that record's timestamp. The first WARMUP s are not counted. Prints
          p50/p95/p99/max and the micro-batch durations (Spark's triggerExecution).
  few:    with the query up and idle, 5 clicks at once; the time until all 5 outputs are read,
          ROUNDS times (where they land in the trigger cycle varies).

Producer and consumer are separate processes (librdkafka clients), as real ones would be: in the
driver process they would contend for the GIL with the query's foreachBatch and skew both.
Then the query stops and its output is checked against the same query in batch mode, and
`bench/floor.py`'s keyed copy (source -> a keyed transformWithStateInPandas step that only hands
rows on -> sink: the shape of every streamjoin query with none of its work) runs the same two
phases on the same connector, in the same session, so streamjoin's figures are set against it.
Before anything is measured the copy runs at the rate, uncounted, in rounds of 15 s until one
keeps up (p99 under 2 s, at most 4 rounds; `floor.warm_keyed_copy`): the first query of a session runs on a JVM
that has not compiled the code the two share.

Targets: p99 at 10k ev/s <= 1.2x the keyed copy's (issue 37); p99 < 1 s, a few records through in
< 0.5 s (issue 14).
Usage: python bench/latency.py [--rate 10000] [--seconds 30] [--interval "200 milliseconds"] [--exactly-once] [--delta]
--exactly-once: the query writes in Kafka transactions, as the engine runs it on Apache Kafka
(without it, at-least-once, as the keyed copy writes). --delta: a Delta table beside the topic, as
`streamjoin run` and the Dagster assets write (the keyed copy writes none).
The default interval is the engine's continuous trigger (200 ms, STREAMJOIN_TRIGGER_INTERVAL_MS).
Measured here under load: "0 seconds" (poll for new offsets without pause) got a few records
through no faster and cost 35% of a core while idle, against 8% at 200 ms.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import time
from dataclasses import dataclass
from datetime import datetime

from common import (BASE_TS, Bench, bench_session, compile_query, cpu_seconds, create_topics, load_average,
                    percentiles, produce, streaming_vs_batch, warm_up)

PARTITIONS = 2
FEW = 5
IDLE_S = 5


def steady_producer(config: dict, topic: str, records: list, rate: float, ready) -> None:
    """Send `records` ((partition, key, value)) at `rate`/s, each stamped with its send time (ms)."""
    from confluent_kafka import Producer

    producer = Producer({**config, "acks": "all", "linger.ms": 1, "queue.buffering.max.messages": 1_000_000})
    producer.list_topics(topic, timeout=30)  # metadata first: the first sends are not slower
    ready.wait()
    started, sent = time.monotonic(), 0
    while sent < len(records):
        due = min(len(records), int((time.monotonic() - started) * rate) + 1)
        while sent < due:
            partition, key, value = records[sent]
            producer.produce(topic, value=value, key=key, partition=partition, timestamp=int(time.time() * 1000))
            sent += 1
        producer.poll(0)
        time.sleep(0.0005)
    if producer.flush(30):
        raise RuntimeError("the latency producer could not deliver every record")


def output_consumer(config: dict, topic: str, partitions: int, since_ms: int, expected: int, timeout_s: float,
                    ready, results) -> None:
    """Read `topic` from its current end; for each record stamped at/after `since_ms`, (its
    timestamp, the time it was read) in ms; put the list on `results` once `expected` were read or
    after `timeout_s` without a new one."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**config, "group.id": "bench-latency", "enable.auto.commit": False,
                         "fetch.wait.max.ms": 5, "fetch.min.bytes": 1})
    # From the end: the few-record rounds follow the steady phase's 300,000 outputs, and reading
    # those first (the broker sometimes pauses ~1 s between their fetches) counted as the rounds'
    # latency. Tansu reports the start of the last record batch as the end: that one batch is
    # read again, and the timestamp filter drops it.
    ends = [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in range(partitions)]
    consumer.assign([TopicPartition(topic, p, end) for p, end in enumerate(ends)])
    seen = []

    def read(timeout: float) -> bool:
        messages = consumer.consume(10_000, timeout=timeout)
        now = time.time() * 1000
        for message in messages:
            if message.error() is None and message.timestamp()[1] >= since_ms:
                seen.append((message.timestamp()[1], now))
        return bool(messages)

    read(1.0)  # connected and fetching before anything is produced
    while read(0.2):
        pass
    ready.set()
    last = time.monotonic()
    while len(seen) < expected and time.monotonic() - last < timeout_s:
        if read(0.01):  # a read's records are stamped when the call returns: it waits no longer
            last = time.monotonic()
    consumer.close()
    results.put(seen)


def encoded_clicks(catalog, count: int, users: int, seed: int) -> list:
    """(partition, key bytes, value bytes) of `count` clicks, encoded with the clicks serde. The
    value does not hold the timestamp, so the producer stamps records as it sends them."""
    from streamjoin.kafka.records import place
    from streamjoin.runtime.compiler import source_serde

    definition = catalog.get("clicks")
    serde = source_serde(definition)
    rng = random.Random(seed)
    records = []
    for n in range(count):
        placed = place(definition.topic, definition.partitions, serde, f"u{rng.randrange(users)}",
                       {"amount": n}, 0, n)
        records.append((placed.partition, placed.record.key, placed.record.value))
    check = place(definition.topic, definition.partitions, serde, "u0", {"amount": 0}, 1, 0).record.value
    assert check == place(definition.topic, definition.partitions, serde, "u0", {"amount": 0}, 2, 0).record.value
    return records


def measure(bench: Bench, topic: str, output: str, records: list, rate: float, since_ms: int,
            timeout_s: float) -> list[tuple[int, float]]:
    """Produce `records` at `rate` while a consumer reads `output`: (timestamp, read time) pairs."""
    from streamjoin.kafka.client import rdkafka_config

    config = rdkafka_config(bench.client_config)
    spawn = multiprocessing.get_context("spawn")
    ready, results = spawn.Event(), spawn.Queue()
    consumer = spawn.Process(target=output_consumer, args=(config, output, PARTITIONS, since_ms, len(records),
                                                           timeout_s, ready, results))
    producer = spawn.Process(target=steady_producer, args=(config, topic, records, rate, ready))
    consumer.start()
    producer.start()
    seen = results.get()  # before join(): a child exits only once its queue is drained
    producer.join()
    consumer.join()
    if producer.exitcode:
        raise RuntimeError(f"the producer process failed (exit {producer.exitcode})")
    return seen


@dataclass
class Running:
    """The continuous query under test and the topics it reads and writes."""

    query: object  # pyspark StreamingQuery
    run: object  # its StreamingRun: the figures of finished batches fold into the report when read
    figures: object  # RunReport
    clicks_topic: str
    output: str

    @property
    def report(self):
        self.run.refresh(self.figures)
        return self.figures

    def last_batch(self) -> int:
        return self.query.lastProgress.batchId if self.query.lastProgress else -1


def main() -> None:
    from floor import against_keyed_copy, warm_keyed_copy  # here: floor imports this module
    from streamjoin.settings import Settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=10_000, help="clicks per second (steady phase)")
    parser.add_argument("--seconds", type=float, default=30, help="length of the steady phase")
    parser.add_argument("--warmup", type=float, default=5, help="first seconds of the steady phase not counted")
    parser.add_argument("--interval", default=f"{Settings.from_env().trigger_interval_ms} milliseconds",
                        help="the processing-time trigger interval (a Spark duration; default: the engine's, "
                             "STREAMJOIN_TRIGGER_INTERVAL_MS or 200 ms)")
    parser.add_argument("--users", type=int, default=10_000, help="rows in the users table")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the few-records case")
    parser.add_argument("--exactly-once", action="store_true",
                        help="the query's tasks write in Kafka transactions, as the engine runs a query on a broker "
                             "that honours them (else at-least-once, as the keyed copy writes)")
    parser.add_argument("--delta", action="store_true",
                        help="the query writes a Delta table beside its topic, as `streamjoin run` and the Dagster "
                             "assets run every query")
    args = parser.parse_args()

    with bench_session("streamjoin-bench-latency") as bench:
        print(f"broker {bench.bootstrap}; {PARTITIONS} partitions per topic; {load_average()}")
        # Keep every batch's progress (Spark keeps the last 100 by default).
        bench.spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
        warm_up(bench)
        sources = [dict(name="clicks", kind="stream", topic=bench.name("clicks"), partitions=PARTITIONS,
                        key=["id"], columns={"id": "STRING", "amount": "BIGINT"}, timestamp=None),
                   dict(name="users", kind="table", topic=bench.name("users"), partitions=PARTITIONS,
                        key=["id"], columns={"id": "STRING", "name": "STRING", "region": "STRING"}, timestamp=None)]
        (query,), catalog = compile_query(
            f"CREATE STREAM {bench.name('enriched')} AS SELECT c.id AS id, c.amount AS amount, u.name AS name, "
            f"u.region AS region FROM clicks c LEFT JOIN users u ON c.id = u.id EMIT CHANGES;", sources)
        create_topics(bench, [query])
        produce(bench, catalog, "users", ((f"u{n}", {"name": f"user {n}", "region": f"r{n % 50}"}, BASE_TS + n)
                                          for n in range(args.users)))
        steady = encoded_clicks(catalog, int(args.rate * args.seconds), args.users, seed=1)
        few = encoded_clicks(catalog, FEW * args.rounds, args.users, seed=2)

        source = Settings.from_env().kafka_source
        warm_keyed_copy(bench, args, source)
        running = start_query(bench, query, sources[0]["topic"], args, source)
        try:
            time.sleep(2)
            idle_cost(running)
            loaded, read_before = running.last_batch(), running.report.input_rows
            seconds_before = dict(running.report.seconds)
            since = int(time.time() * 1000)
            seen = measure(bench, running.clicks_topic, running.output, steady, args.rate, since, timeout_s=30)
            batches = batches_after(running, loaded, read_before, len(steady))
            ours = steady_report(args, seen, since, len(steady), batches)
            if batches:
                batch_profile(running, batches, seconds_before)
            spans = few_records(bench, running, few, args.rounds)
        finally:
            running.query.stop()
        if running.query.exception() is not None:
            raise RuntimeError(f"the query failed: {running.query.exception()}")
        print(f"  {streaming_vs_batch(bench, [query]).line()}")
        against_keyed_copy(bench, args, source, ours, spans)
        print(f"done; {load_average()}")


def start_query(bench: Bench, query, clicks_topic: str, args, source) -> Running:
    """The query under a processing-time trigger (`args.interval`), reading with `source` (a
    KafkaSource), once its first batches have loaded the table (`args.users` rows)."""
    from streamjoin.app.outputs import DeltaOutput
    from streamjoin.runtime.report import RunReport
    from streamjoin.spark.query import SinkTarget, streaming_run

    interval, users = args.interval, args.users
    print(f"the query writes {'exactly-once (Kafka transactions)' if args.exactly_once else 'at-least-once'}"
          + (", and a Delta table" if args.delta else ""))
    table = DeltaOutput(query, str(bench.work_dir / "delta" / query.name)) if args.delta else None
    run = streaming_run(query, {"kafka.bootstrap.servers": bench.bootstrap}, bench.client_config,
                        bench.work_dir / "checkpoints" / query.name, source=source,
                        transactions=query.name if args.exactly_once else None, target=SinkTarget(table=table))
    report = RunReport(query=query.name, output_topic=query.sink.topic)
    started = time.perf_counter()
    running = Running(run.start(bench.spark, {"processingTime": interval}), run, report, clicks_topic,
                      query.sink.topic)
    while running.report.input_rows < users:
        if not running.query.isActive:
            raise RuntimeError(f"the query stopped: {running.query.exception()}")
        time.sleep(0.05)
    print(f"query up with trigger processingTime={interval!r}: the {users:,}-row table loaded "
          f"{time.perf_counter() - started:,.1f} s after start")
    return running


def idle_cost(running: Running) -> None:
    """What the trigger costs while there is nothing to do (a shorter one polls more often)."""
    cpu_before, started = cpu_seconds(os.getpid()), time.perf_counter()
    time.sleep(IDLE_S)
    used = (cpu_seconds(os.getpid()) - cpu_before) / (time.perf_counter() - started)
    print(f"idle: the bench's processes (driver, JVM, Python workers, broker) used {used:.0%} of a core "
          f"over {IDLE_S:g} s with no input")


def few_records(bench: Bench, running: Running, records: list, rounds: int) -> list[float]:
    """FEW records at once into the idle query, `rounds` times: from the first one's produce time
    to the last output read (s, the complete rounds'); then Spark's phases of those micro-batches."""
    before, read_before, seconds_before = running.last_batch(), running.report.input_rows, dict(running.report.seconds)
    spans = []  # per round: (the first record's produce time, the last output's read time), ms
    print(f"few records: {FEW} clicks at once into the idle query, {rounds} rounds (target: all outputs in < 0.5 s)")
    for round_ in range(rounds):
        time.sleep(1.5 + random.Random(round_).random())  # a different point of the trigger cycle
        seen = measure(bench, running.clicks_topic, running.output, records[FEW * round_:FEW * (round_ + 1)],
                       1e9, int(time.time() * 1000), timeout_s=10)
        if len(seen) == FEW:
            spans.append((min(ts for ts, _ in seen), max(read for _, read in seen)))
            done = spans[-1][1] - spans[-1][0]
            print(f"  round {round_ + 1}: all {FEW} outputs read {done / 1000:.3f} s after producing")
        else:
            print(f"  round {round_ + 1}: only {len(seen)} of {FEW} outputs in 10 s")
    batches = batches_after(running, before, read_before, FEW * rounds, timeout_s=10)
    if batches:
        batch_profile(running, batches, seconds_before)
        print("  " + round_phases(spans, batches))
    return [(read - produced) / 1000 for produced, read in spans]


def batch_profile(running: Running, batches: list, seconds_before: dict) -> None:
    """Where `batches` spent their time, mean per batch: Spark's phases; inside addBatch, the
    driver's laps and the tasks' stages (summed over the tasks, from the run's report since
    `seconds_before`); the stateful step's state store."""
    phases: dict[str, float] = {}
    for batch in batches:
        for phase, ms in batch.durationMs.items():
            phases[phase] = phases.get(phase, 0) + ms / len(batches)
    print(f"  their {len(batches)} micro-batches, mean per phase: " + ", ".join(
        f"{phase} {ms / 1000:.3f} s" for phase, ms in sorted(phases.items(), key=lambda kv: -kv[1])))
    spent = {stage: (total - seconds_before.get(stage, 0.0)) / len(batches)
             for stage, total in running.report.seconds.items()}
    print("  inside them, mean per batch: " + ", ".join(
        f"{stage} {spent[stage] * 1000:.0f} ms" for stage in sorted(spent, key=lambda s: -spent[s])
        if spent[stage] >= 0.0005))
    print("  " + state_store_line(batches))


def state_store_line(batches: list) -> str:
    """What the stateful step's state store reported for these batches (summed over its tasks):
    the time the tasks spent processing, RocksDB's load and commit."""
    figures = {"processing (allUpdatesTimeMs)": 0.0, "RocksDB load": 0.0, "commit": 0.0}
    for batch in batches:
        for operator in batch.stateOperators:
            figures["processing (allUpdatesTimeMs)"] += operator.allUpdatesTimeMs / len(batches)
            figures["RocksDB load"] += operator.customMetrics.get("rocksdbLoadLatencyMs", 0) / len(batches)
            figures["commit"] += operator.commitTimeMs / len(batches)
    return "the stateful step's state store, mean per batch over its tasks: " + ", ".join(
        f"{name} {ms:.0f} ms" for name, ms in figures.items())


def round_phases(spans: list[tuple[int, float]], batches: list) -> str:
    """Where a round's time went: from producing to the start of the micro-batch that took the
    records (the trigger's wait), that batch, and from its end to the outputs read."""
    ran = [(datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp() * 1000,
            p.durationMs["triggerExecution"]) for p in batches]
    waits, after = [], []
    for produced, read in spans:
        taking = [(start, took) for start, took in ran if start + took >= produced]  # the first to end after it
        if taking:
            start, took = min(taking)
            waits.append(start - produced)
            after.append(read - start - took)
    if not waits:
        return "no micro-batch matched the rounds"
    return (f"per round, mean: produce -> its micro-batch starts {sum(waits) / len(waits) / 1000:.3f} s, "
            f"that batch's end -> all outputs read {sum(after) / len(after) / 1000:.3f} s")


def batches_after(running: Running, after: int, read_before: int, records: int, timeout_s: float = 30) -> list:
    """The progress of the batches after batch `after` that read input, once the tasks have read
    `records` more than `read_before` (the query's report counts records; Spark's numInputRows
    counts the source's rows, chunks of records) and Spark has reported the last of them."""
    deadline = time.monotonic() + timeout_s
    while running.report.input_rows - read_before < records and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)  # the batch that read the last records reports its progress when it ends
    batches = {p.batchId: p for p in running.query.recentProgress if p.batchId > after and p.numInputRows}
    return [batches[n] for n in sorted(batches)]


def steady_report(args, seen: list[tuple[int, float]], since: int, produced: int, batches: list) -> dict:
    """Prints the steady phase; returns its percentiles (ms; empty when nothing was counted)."""
    first = min((ts for ts, _ in seen), default=since)  # the first record's produce time
    counted = [read - ts for ts, read in seen if ts >= first + args.warmup * 1000]
    print(f"steady: {produced:,} clicks at {args.rate:,.0f}/s for {args.seconds:g} s; "
          f"{len(seen):,} outputs read" + ("" if len(seen) == produced else f" (MISSING {produced - len(seen):,})"))
    latency = percentiles(counted) if counted else {}
    if counted:
        print(f"  latency produce -> output read (after the first {args.warmup:g} s, {len(counted):,} records): "
              + ", ".join(f"{name} {ms / 1000:.3f} s" for name, ms in latency.items())
              + f"  (target p99 < 1 s: {'met' if latency['p99'] < 1000 else 'NOT met'})")
    # Latency that grows through the run means the query does not keep up with the rate.
    windows: dict[int, list[float]] = {}
    for ts, read in seen:
        windows.setdefault(int((ts - first) // 5000), []).append(read - ts)
    print("  p99 per 5 s of produce time: " + ", ".join(f"{percentiles(values)['p99'] / 1000:.2f}"
                                                       for _, values in sorted(windows.items())) + " s")
    if batches:
        durations = [p.durationMs["triggerExecution"] for p in batches]
        figures = percentiles(durations)
        print(f"  micro-batches with input: {len(batches)}; duration (triggerExecution) "
              + ", ".join(f"{name} {ms / 1000:.3f} s" for name, ms in figures.items())
              + f"; records per batch: mean {produced / len(batches):,.0f}")
    return latency


if __name__ == "__main__":
    main()
