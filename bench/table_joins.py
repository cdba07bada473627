"""Table-table join benchmark (ksqlDB syntax through our planner, Kafka to Kafka, availableNow).

  PK: UPDATES updates over UPDATES/10 keys, alternating between two tables (2 partitions,
      co-partitioned), `l INNER JOIN r ON l.id = r.id`: every update that finds the other side
      emits the new joined row.
  FK: UPDATES left rows, each referencing one of UPDATES/100 right keys, then the right rows
      (2 partitions each; every task reads the right table whole), `l INNER JOIN r ON
      l.fk = r.id`: each right row arriving fans out to the ~100 left rows subscribed to it.

Prints updates/s (input records over the query's wall time, start-up included), the state as
committed (pickled runtimes without their stores + the stores' key-group pages, read back with
Spark's `statestore` data source; the checkpoint's state directory on disk for scale), the peak
RSS of Spark's Python workers during the run, whether the output equals the same query run in
batch mode over the same inputs (streaming == batch), and then the state-size test: TOUCH more
updates run against that state, and the same TOUCH updates run by the same query against an
empty state (the baseline). A batch loads and writes only the
key-group pages its keys fall in (about two per update), not the whole state; the loaded run
also starts a query, which opens the state store from the checkpoint (a cost that grows with the
state in any design), so its ratio is above 1.
Usage: python bench/table_joins.py [--updates N] [--only pk|fk]   (default 1,000,000: the FK run's
left table has 1M keys). 200,000 updates took 4.6 min at load ~10 (the streaming == batch check
~40% of it).
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass
from typing import Callable

from common import (BASE_TS, Agreement, Bench, StateSize, Timed, WorkerMemory, bench_session, compile_query,
                    create_topics, load_average, measured_streamjoin, produce, run_streamjoin, streaming_vs_batch,
                    warm_up)

TOUCH = 1_000


def table(bench: Bench, name: str, tag: str, columns: dict) -> dict:
    return dict(name=name, kind="table", topic=bench.name(name + tag), partitions=2, key=["id"],
                columns={"id": "STRING", **columns}, timestamp=None)


def pk_query(bench: Bench, tag: str):
    return compile_query(
        f"CREATE TABLE {bench.name('pk_joined' + tag)} AS SELECT l.id AS id, l.v AS lv, r.v AS rv "
        f"FROM pl l INNER JOIN pr r ON l.id = r.id EMIT CHANGES;",
        [table(bench, "pl", tag, {"v": "BIGINT"}), table(bench, "pr", tag, {"v": "BIGINT"})])


def pk_updates(bench: Bench, catalog, count: int, keys: int, first_ts: int, seed: int) -> int:
    """`count` updates alternating sides, each side's in time order, interleaved in time."""
    rng = random.Random(seed)
    return sum(produce(bench, catalog, side, ((f"k{rng.randrange(keys)}", {"v": n}, first_ts + 2 * n + offset)
                                              for n in range(count // 2 + offset * (count % 2))))
               for offset, side in enumerate(("pl", "pr")))


def fk_query(bench: Bench, tag: str):
    return compile_query(
        f"CREATE TABLE {bench.name('fk_joined' + tag)} AS SELECT l.id AS id, l.v AS lv, r.id AS rid, "
        f"r.v AS rv FROM fl l INNER JOIN fr r ON l.fk = r.id EMIT CHANGES;",
        [table(bench, "fl", tag, {"fk": "STRING", "v": "BIGINT"}), table(bench, "fr", tag, {"v": "BIGINT"})])


def fk_left_rows(bench: Bench, catalog, keys, right_keys: int, first_ts: int, seed: int) -> int:
    """A left row per key in `keys`, each referencing a random right key."""
    rng = random.Random(seed)
    return produce(bench, catalog, "fl", ((f"l{key}", {"fk": f"r{rng.randrange(right_keys)}", "v": n}, first_ts + n)
                                          for n, key in enumerate(keys)))


@dataclass
class Result:
    timed: Timed
    produced: int
    state: StateSize
    memory: WorkerMemory
    batch: Agreement
    loaded: Timed  # TOUCH more updates against the state
    empty: Timed  # the same TOUCH updates against an empty state


def measured_run(bench: Bench, queries) -> tuple[Timed, StateSize, WorkerMemory, Agreement]:
    """The query over everything produced so far, its state, its workers' memory, and the same
    query in batch mode over the same inputs."""
    run = measured_streamjoin(bench, queries)
    return run.timed, run.state, run.memory, streaming_vs_batch(bench, queries)


def primary_key(bench: Bench, updates: int) -> Result:
    keys = max(updates // 10, 1)
    queries, catalog = pk_query(bench, "")
    create_topics(bench, queries)
    produced = pk_updates(bench, catalog, updates, keys, BASE_TS, seed=3)
    print(f"PK: produced {produced:,} updates over {keys:,} keys")
    measured = measured_run(bench, queries)

    def touch(catalog) -> int:
        return pk_updates(bench, catalog, TOUCH, keys, BASE_TS + 3 * updates, seed=5)

    return Result(measured[0], produced, *measured[1:], *touch_runs(bench, queries, catalog, pk_query, touch))


def foreign_key(bench: Bench, left_rows: int) -> Result:
    right_keys = max(left_rows // 100, 1)
    queries, catalog = fk_query(bench, "")
    create_topics(bench, queries)
    # Left rows first (no match yet: nothing emitted), then each right row fans out.
    produced = fk_left_rows(bench, catalog, range(left_rows), right_keys, BASE_TS, seed=4)
    produced += produce(bench, catalog, "fr", ((f"r{n}", {"v": n}, BASE_TS + left_rows + n)
                                               for n in range(right_keys)))
    print(f"FK: produced {left_rows:,} left rows + {right_keys:,} right rows")
    measured = measured_run(bench, queries)
    moved = random.Random(6).sample(range(left_rows), min(TOUCH, left_rows))  # left rows changing their FK

    def touch(catalog) -> int:
        return fk_left_rows(bench, catalog, moved, right_keys, BASE_TS + 3 * left_rows, seed=7)

    return Result(measured[0], produced, *measured[1:], *touch_runs(bench, queries, catalog, fk_query, touch))


def touch_runs(bench: Bench, queries, catalog, build: Callable, touch: Callable) -> tuple[Timed, Timed]:
    """TOUCH more updates through the loaded query (resuming its checkpoint), then the same
    updates through a fresh copy of the query (own topics, empty state)."""
    touch(catalog)
    loaded, _ = run_streamjoin(bench, queries)
    empty_queries, empty_catalog = build(bench, "_empty")
    create_topics(bench, empty_queries)
    touch(empty_catalog)
    empty, _ = run_streamjoin(bench, empty_queries)
    return loaded, empty


def report(label: str, result: Result) -> None:
    timed, produced, state, loaded, empty = result.timed, result.produced, result.state, result.loaded, result.empty
    if timed.input_records != produced:
        raise RuntimeError(f"streamjoin read {timed.input_records:,} records, {produced:,} were produced")
    print(f"{label}\n"
          f"  {timed.rate:>9,.0f} updates/s  ({timed.input_records:,} in, {timed.output_records:,} out, "
          f"{timed.seconds:,.1f} s)\n"
          f"  {state.line()}\n"
          f"  {result.memory.line()}\n"
          f"  {result.batch.line()}\n"
          f"  {TOUCH:,} more updates: {loaded.seconds:,.1f} s against that state vs {empty.seconds:,.1f} s "
          f"against an empty state (baseline); ratio {loaded.seconds / empty.seconds:.2f}")


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
                   f"{max(args.updates // 10, 1):,} keys", primary_key(bench, args.updates))
        if args.only in (None, "fk"):
            report(f"FK table-table INNER JOIN, {max(args.updates // 100, 1):,} right keys fanning out to "
                   f"{args.updates:,} left rows", foreign_key(bench, args.updates))
        print(f"done; {load_average()}")


if __name__ == "__main__":
    main()
