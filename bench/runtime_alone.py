"""The per-record Python cost of one task, without Spark or a broker: the two `stream_joins.py`
workloads planned and compiled as there, their records encoded with each source's serde as
`produce` encodes them, all given to one task (one partition per topic).

  (a) enrichment: USERS users (a table) then CLICKS clicks LEFT JOIN them (every click finds
      its user), ksqlDB stream-table join.
  (b) interval: CLICKS/2 orders + CLICKS/2 payments over 10 h of event time, ids from
      CLICKS/10 (~1 match per order), ksqlDB `INNER JOIN ... WITHIN 1 HOURS`.
  (c) table-table: CLICKS updates alternating between two tables (one in 20 a tombstone) over
      CLICKS/10 keys, ksqlDB primary-key `INNER JOIN` (bench/table_joins.py's PK shape).
  (d) Flink interval: (b)'s records keyless, timed by their rowtime columns, Flink's
      `o.ot BETWEEN p.pt - INTERVAL '1' HOUR AND p.pt + INTERVAL '1' HOUR`.

Per workload, each on a fresh runtime, best of --repeat runs:
  process       `runtime.process(row)` over every row, in Kafka Streams order
  ordered_rows  the adapter unpacking and ordering the same rows, packed as the source packs them
  process_rows  the adapter turning them into output rows (`process_rows`)
Each measure runs with the cycle collector paused, as the adapter runs a task's batch.
Printed as input records per CPU second of this process (steadier than wall time on a shared
machine; the wall seconds are printed too), with the runtime's own profile (`runtime.seconds`)
of the last run and a digest of the output rows: a change that keeps behaviour keeps the digest.

With --value-format AVRO|PROTOBUF|JSON_SR, (a), (b) and (c) read and write that format (the
registry at STREAMJOIN_SCHEMA_REGISTRY_URL: a fresh one per format, as the subjects are the
topics' names, e.g. `streamjoin registry start` under a new STREAMJOIN_HOME).

Usage: python bench/runtime_alone.py [--clicks N] [--repeat R] [--only a|b|c|d] [--profile]
[--value-format F] (default 200,000 clicks, 20,000 users; ~1 min). Needs pyspark importable (the
adapter module), never starts Spark.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import pstats
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import BASE_TS, compile_query  # noqa: E402

HOUR_MS = 3_600_000
SPAN_MS = 10 * HOUR_MS


VALUE_FORMAT = ["JSON"]  # the sources' value format (--value-format)


def source(name: str, kind: str, columns: dict) -> dict:
    return dict(name=name, kind=kind, topic=name, partitions=1, key=["id"], columns=columns, timestamp=None,
                value_format=VALUE_FORMAT[0])


def input_rows(catalog, name: str, rows) -> list:
    """`rows` ((key, value, ts)) encoded with source `name`'s serde, as InputRows of partition 0."""
    from streamjoin.kafka.records import place
    from streamjoin.runtime.compiler import source_serde
    from streamjoin.runtime.contract import InputRow

    definition = catalog.get(name)
    serde = source_serde(definition)
    out = []
    for offset, (key, value, ts) in enumerate(rows):
        record = place(definition.topic, 1, serde, key, value, ts, offset).record
        out.append(InputRow(definition.topic, 0, offset, ts, record.key, record.value, ()))
    return out


def enrichment(clicks: int):
    users = max(clicks // 10, 1)
    queries, catalog = compile_query(
        "CREATE STREAM e AS SELECT c.id AS id, c.amount AS amount, u.name AS name, u.region AS region "
        "FROM clicks c LEFT JOIN users u ON c.id = u.id EMIT CHANGES;",
        [source("clicks", "stream", {"id": "STRING", "amount": "BIGINT"}),
         source("users", "table", {"id": "STRING", "name": "STRING", "region": "STRING"})])
    rng = random.Random(1)
    rows = input_rows(catalog, "users", ((f"u{n}", {"name": f"user {n}", "region": f"r{n % 50}"}, BASE_TS + n)
                                         for n in range(users)))
    rows += input_rows(catalog, "clicks", ((f"u{rng.randrange(users)}", {"amount": n}, BASE_TS + users + n)
                                           for n in range(clicks)))
    return queries, rows, f"{users:,} users + {clicks:,} clicks"


def interval(clicks: int):
    per_side, ids = max(clicks // 2, 1), max(clicks // 10, 1)
    columns = {"id": "STRING", "v": "BIGINT"}
    queries, catalog = compile_query(
        "CREATE STREAM m AS SELECT o.id AS id, o.v AS ov, p.v AS pv FROM orders o INNER JOIN payments p "
        "WITHIN 1 HOURS ON o.id = p.id EMIT CHANGES;",
        [source("orders", "stream", columns), source("payments", "stream", columns)])
    rng, step, rows = random.Random(2), SPAN_MS / (2 * per_side), []
    for name, offset in (("orders", 0), ("payments", 1)):
        rows += input_rows(catalog, name, ((f"id{rng.randrange(ids)}", {"v": n}, BASE_TS + int((2 * n + offset) * step))
                                           for n in range(per_side)))
    return queries, rows, f"{per_side:,} orders + {per_side:,} payments"


def flink_interval(clicks: int):
    """(b)'s records as Flink reads them: keyless, each timed by its rowtime column."""
    from datetime import datetime, timezone

    per_side, ids = max(clicks // 2, 1), max(clicks // 10, 1)
    sources = [dict(name=name, kind="stream", topic=name, partitions=1, key=[], timestamp=f"{name[0]}t",
                    columns={"id": "STRING", "v": "BIGINT", f"{name[0]}t": "TIMESTAMP(3)"})
               for name in ("orders", "payments")]
    queries, catalog = compile_query(
        "SELECT o.id AS id, o.v AS ov, p.v AS pv FROM orders o, payments p WHERE o.id = p.id "
        "AND o.ot BETWEEN p.pt - INTERVAL '1' HOUR AND p.pt + INTERVAL '1' HOUR", sources, "flink")
    rng, step, rows = random.Random(2), SPAN_MS / (2 * per_side), []
    for name, offset in (("orders", 0), ("payments", 1)):
        times = (BASE_TS + int((2 * n + offset) * step) for n in range(per_side))
        rows += input_rows(catalog, name, ((None, {"id": f"id{rng.randrange(ids)}", "v": n,
                                                   f"{name[0]}t": datetime.fromtimestamp(ts / 1000, timezone.utc)}, ts)
                                           for n, ts in enumerate(times)))
    return queries, rows, f"{per_side:,} orders + {per_side:,} payments (Flink)"


def table_table(clicks: int):
    keys, columns = max(clicks // 10, 1), {"id": "STRING", "v": "BIGINT"}
    queries, catalog = compile_query(
        "CREATE TABLE j AS SELECT l.id AS id, l.v AS lv, r.v AS rv FROM pl l INNER JOIN pr r ON l.id = r.id "
        "EMIT CHANGES;", [source("pl", "table", columns), source("pr", "table", columns)])
    rng, rows = random.Random(3), []
    for offset, name in enumerate(("pl", "pr")):
        rows += input_rows(catalog, name, ((f"k{rng.randrange(keys)}", None if rng.random() < 0.05 else {"v": n},
                                            BASE_TS + 2 * n + offset) for n in range(clicks // 2)))
    return queries, rows, f"{clicks // 2:,} updates of each table over {keys:,} keys"


def frame_of(rows, chunk: int = 50_000):
    """The rows as the source packs them for a task: per topic, chunks of `chunk` records."""
    import pyarrow as pa

    from streamjoin.spark.packing import pack_records, record_batch

    batches = []
    for topic in dict.fromkeys(row.topic for row in rows):
        mine = [row for row in rows if row.topic == topic]
        for start in range(0, len(mine), chunk):
            part = mine[start:start + chunk]
            records = record_batch([r.offset for r in part], [r.ts for r in part], [r.key for r in part],
                                   [r.value for r in part], [r.headers or None for r in part])
            batches.append(pack_records(topic, 0, records))
    return pa.Table.from_batches(batches).to_pandas()


def digest(rows) -> str:
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:12]


def measure(name: str, queries, rows, repeat: int, profile: bool) -> None:
    from streamjoin.spark.adapter import ordered_rows, output_rows, process_rows
    from streamjoin.spark.collector import cycle_collection_paused

    (query,) = queries
    frame = frame_of(rows)
    ordered = list(ordered_rows(frame))
    best: dict[str, tuple[float, float]] = {}  # measure -> least (CPU, wall) seconds

    def timed(measure_name: str, run):
        cpu, wall = time.process_time(), time.perf_counter()
        with cycle_collection_paused():  # as the adapter runs a batch
            result = run()
        taken = (time.process_time() - cpu, time.perf_counter() - wall)
        best[measure_name] = min(best.get(measure_name, taken), taken)
        return result

    for _ in range(repeat):
        runtime = query.factory(0)
        outputs = timed("process", lambda: [runtime.process(row) for row in ordered])
        again = timed("ordered_rows", lambda: list(ordered_rows(frame)))
        runtime = query.factory(0)
        out = timed("process_rows", lambda: process_rows(runtime, again))
    checked = [r for row, o in zip(ordered, outputs) for r in output_rows(runtime, o, row)]
    if checked != out:
        raise RuntimeError("runtime.process and process_rows disagree")
    print(f"  {len(rows):,} records -> {len(out):,} output rows (digest {digest(out)}, "
          f"counters {dict(sorted(runtime.counters().items()))})")
    for measure_name, (cpu, wall) in best.items():
        print(f"  {measure_name:13} {len(rows) / cpu:>12,.0f} records/s  ({cpu:.3f} CPU s, {wall:.3f} wall s)")
    print("  runtime.seconds (last process_rows): "
          + ", ".join(f"{k} {v:.3f} s" for k, v in sorted(runtime.seconds.items())))
    if profile:
        runtime = query.factory(0)
        profiler = cProfile.Profile(time.process_time)  # CPU time: the machine may be busy
        profiler.runcall(process_rows, runtime, ordered)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=("a", "b", "c", "d"))
    parser.add_argument("--profile", action="store_true", help="also print a cProfile of process_rows")
    parser.add_argument("--value-format", default="JSON", choices=("JSON", "AVRO", "PROTOBUF", "JSON_SR"))
    args = parser.parse_args()
    VALUE_FORMAT[0] = args.value_format
    if args.value_format != "JSON":
        from streamjoin.serde.registry_codecs import Registry, configure
        from streamjoin.settings import Settings

        url = Settings.from_env().schema_registry_url
        if not url:
            sys.exit("set STREAMJOIN_SCHEMA_REGISTRY_URL to a schema registry (see the usage)")
        configure(Registry(url))
    for key, name, workload in (("a", "enrichment", enrichment), ("b", "interval", interval),
                                ("c", "table-table", table_table), ("d", "Flink interval", flink_interval)):
        if args.only in (None, key):
            queries, rows, what = workload(args.clicks)
            print(f"({key}) {name}: {what}")
            measure(name, queries, rows, args.repeat, args.profile)


if __name__ == "__main__":
    main()
