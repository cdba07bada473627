"""Produce benchmark: the driver's produce step (`streamjoin.kafka.rdkafka.produce_arrow`) on the
Arrow table a streaming query writes at the end of each micro-batch (`StreamingRun._produce`:
topic, key, value, timestamp, headers mostly null), against a bare librdkafka loop over the same
records (the ceiling from Python).

Starts a private embedded broker under a temporary STREAMJOIN_HOME (or uses
STREAMJOIN_KAFKA_BOOTSTRAP), no Spark; produces RECORDS records (~10-byte keys, ~60-byte JSON
values) to a 2-partition topic REPEAT times per variant (keyed, as the enrichment query writes;
keyless, round-robin) and prints records/s per run and the best, with the CPU time of this
process per record (the Python loop and librdkafka's threads; the broker is another process):
on 2 shared cores the rates move 2x with the load, the CPU time much less.
Usage: python bench/produce.py [RECORDS] [REPEAT]
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import uuid

import pyarrow as pa

BASE_TS = 1_700_000_000_000
PARTITIONS = 2
HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def sink_table(topic: str, count: int, keyed: bool) -> pa.Table:
    """Like `StreamingRun._produce`'s: every 100th record carries a header of its input."""
    values = [json.dumps({"ORDER_ID": n, "CUSTOMER": f"c{n % 9973}", "AMOUNT": n % 500 * 1.5,
                          "CITY": "Lisbon"}, separators=(",", ":")).encode() for n in range(count)]
    return pa.table({
        "topic": pa.array([topic] * count, pa.string()),
        "key": pa.array([b"cust-%05d" % (n % 99_991) if keyed else None for n in range(count)], pa.binary()),
        "value": pa.array(values, pa.binary()),
        "timestamp": pa.array([BASE_TS + n for n in range(count)], pa.int64()).cast(pa.timestamp("ms")),
        "headers": pa.array([[{"key": "origin", "value": b"in-%d" % n}] if n % 100 == 0 else None
                             for n in range(count)], HEADERS)})


def bare_loop(client_config: dict, table: pa.Table) -> float:
    """Seconds for librdkafka to take the same records from the simplest Python loop."""
    from confluent_kafka import Producer

    from streamjoin.kafka.client import rdkafka_config

    producer = Producer({**rdkafka_config(client_config), "acks": "all", "linger.ms": 20,
                         "batch.num.messages": 10_000, "queue.buffering.max.messages": 500_000})
    topic = table.column("topic")[0].as_py()
    started = time.perf_counter()
    for key, value in zip(table.column("key").to_pylist(), table.column("value").to_pylist()):
        producer.produce(topic, value, key)
    if producer.flush(60):
        raise RuntimeError("the bare loop's records were not all acknowledged")
    return time.perf_counter() - started


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory(prefix="streamjoin-bench-") as tmp:
        os.environ["STREAMJOIN_HOME"] = tmp
        from streamjoin.kafka import admin, embedded
        from streamjoin.kafka.client import kafka_client_config
        from streamjoin.kafka.rdkafka import produce_arrow
        from streamjoin.settings import Settings

        settings = Settings.from_env()
        bootstrap = embedded.ensure_bootstrap(settings)
        try:
            client_config = kafka_client_config(settings, bootstrap)
            topic = f"produce_{uuid.uuid4().hex[:6]}"
            admin.create_topics(bootstrap, {topic: PARTITIONS})
            print(f"load: {os.getloadavg()[0]:.2f}; {count:,} records x {repeat} per variant")
            for keyed in (True, False):
                table = sink_table(topic, count, keyed)
                rates, cpu = [], []
                for run in range(repeat):
                    started, cpu_started = time.perf_counter(), time.process_time()
                    sent = produce_arrow(client_config, table.to_batches(), "bench", run)
                    seconds = time.perf_counter() - started
                    assert sent == count, sent
                    rates.append(count / seconds)
                    cpu.append((time.process_time() - cpu_started) / count * 1e6)
                    print(f"  produce_arrow {'keyed' if keyed else 'keyless'} run {run}: {seconds:.2f} s, "
                          f"{rates[-1]:,.0f} records/s, {cpu[-1]:.1f} us CPU/record")
                print(f"produce_arrow {'keyed' if keyed else 'keyless'}: best {max(rates):,.0f} records/s, "
                      f"{min(cpu):.1f} us CPU/record")
            table, started = sink_table(topic, count, True), time.process_time()
            seconds = min(bare_loop(client_config, table) for _ in range(repeat))
            print(f"bare librdkafka loop (key, value only): best {count / seconds:,.0f} records/s, "
                  f"{(time.process_time() - started) / count / repeat * 1e6:.1f} us CPU/record (mean)")
            print(f"load: {os.getloadavg()[0]:.2f}")
        finally:
            if not settings.kafka_bootstrap:
                embedded.stop(settings)


if __name__ == "__main__":
    main()
