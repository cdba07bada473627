"""Table-table join benchmark (ksqlDB syntax through our planner, Kafka to Kafka, availableNow).

  PK: UPDATES updates over UPDATES/10 keys, alternating between two tables (2 partitions,
      co-partitioned), `l INNER JOIN r ON l.id = r.id`: every update that finds the other side
      emits the new joined row.
  FK: UPDATES left rows, each referencing one of UPDATES/100 right keys, then the right rows
      (1 partition: the foreign-key join's two stages run in one task), `l INNER JOIN r ON
      l.fk = r.id`: each right row arriving fans out to the ~100 left rows subscribed to it.

Prints updates/s (input records over the query's wall time, start-up included) and the state
size: the bytes of the pickled task runtimes (cloudpickle, as committed in the last batch, read
back with Spark's `statestore` data source) and, for scale, the checkpoint's state directory on
disk (compressed RocksDB files of every retained version).
Usage: python bench/table_joins.py [--updates N]   (default 1,000,000)
"""

from __future__ import annotations

import argparse
import random

from common import (BASE_TS, Bench, Timed, bench_session, compile_query, create_topics, load_average,
                    mb, produce, run_streamjoin, state_size, warm_up)


def table(bench: Bench, name: str, columns: dict, partitions: int) -> dict:
    return dict(name=name, kind="table", topic=bench.name(name), partitions=partitions, key=["id"],
                columns={"id": "STRING", **columns}, timestamp=None)


def primary_key(bench: Bench, updates: int) -> tuple[Timed, int, tuple[int, int]]:
    keys = max(updates // 10, 1)
    queries, catalog = compile_query(
        f"CREATE TABLE {bench.name('pk_joined')} AS SELECT l.id AS id, l.v AS lv, r.v AS rv "
        f"FROM pl l INNER JOIN pr r ON l.id = r.id EMIT CHANGES;",
        [table(bench, "pl", {"v": "BIGINT"}, 2), table(bench, "pr", {"v": "BIGINT"}, 2)])
    create_topics(bench, queries)
    rng = random.Random(3)
    # Updates alternate sides; each side's records are in time order, interleaved in time.
    produced = sum(produce(bench, catalog, side, ((f"k{rng.randrange(keys)}", {"v": n},
                                                   BASE_TS + 2 * n + offset)
                                                  for n in range(updates // 2 + offset * (updates % 2))))
                   for offset, side in enumerate(("pl", "pr")))
    print(f"PK: produced {produced:,} updates over {keys:,} keys")
    timed, checkpoints = run_streamjoin(bench, queries)
    return timed, produced, state_size(bench.spark, checkpoints[-1])


def foreign_key(bench: Bench, left_rows: int) -> tuple[Timed, int, tuple[int, int]]:
    right_keys = max(left_rows // 100, 1)
    queries, catalog = compile_query(
        f"CREATE TABLE {bench.name('fk_joined')} AS SELECT l.id AS id, l.v AS lv, r.id AS rid, "
        f"r.v AS rv FROM fl l INNER JOIN fr r ON l.fk = r.id EMIT CHANGES;",
        [table(bench, "fl", {"fk": "STRING", "v": "BIGINT"}, 1), table(bench, "fr", {"v": "BIGINT"}, 1)])
    create_topics(bench, queries)
    rng = random.Random(4)
    # Left rows first (no match yet: nothing emitted), then each right row fans out.
    produced = produce(bench, catalog, "fl", ((f"l{n}", {"fk": f"r{rng.randrange(right_keys)}", "v": n},
                                               BASE_TS + n) for n in range(left_rows)))
    produced += produce(bench, catalog, "fr", ((f"r{n}", {"v": n}, BASE_TS + left_rows + n)
                                               for n in range(right_keys)))
    print(f"FK: produced {left_rows:,} left rows + {right_keys:,} right rows")
    timed, checkpoints = run_streamjoin(bench, queries)
    return timed, produced, state_size(bench.spark, checkpoints[-1])


def report(label: str, timed: Timed, produced: int, state: tuple[int, int]) -> None:
    if timed.input_records != produced:
        raise RuntimeError(f"streamjoin read {timed.input_records:,} records, {produced:,} were produced")
    pickled, on_disk = state
    print(f"{label}\n"
          f"  {timed.rate:>9,.0f} updates/s  ({timed.input_records:,} in, {timed.output_records:,} out, "
          f"{timed.seconds:,.1f} s)\n"
          f"  state: {mb(pickled)} pickled task runtimes (cloudpickle, last committed); "
          f"{mb(on_disk)} checkpoint state dir on disk")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=1_000_000,
                        help="PK: updates (keys: updates/10); FK: left rows (right keys: updates/100)")
    parser.add_argument("--only", choices=("pk", "fk"), help="run one of the two benchmarks")
    args = parser.parse_args()
    with bench_session("streamjoin-bench-table-joins") as bench:
        print(f"broker {bench.bootstrap}; {load_average()}")
        warm_up(bench)
        if args.only in (None, "pk"):
            report(f"PK table-table INNER JOIN, {args.updates:,} updates over "
                   f"{max(args.updates // 10, 1):,} keys", *primary_key(bench, args.updates))
        if args.only in (None, "fk"):
            report(f"FK table-table INNER JOIN, {max(args.updates // 100, 1):,} right keys fanning out to "
                   f"{args.updates:,} left rows", *foreign_key(bench, args.updates))
        print(f"done; {load_average()}")


if __name__ == "__main__":
    main()
