"""How time, memory and state grow with the input: `stream_joins.py`'s two workloads, streamjoin
alone (Kafka to Kafka, availableNow, the source STREAMJOIN_KAFKA_SOURCE names), at multiples of
EVENTS.

For each workload and factor k the bench produces k x EVENTS events on fresh topics (the
enrichment's table k x EVENTS/10 keys, or `--table-keys`, also scaled by k; the interval join's ids
k x EVENTS/10 over the same 10 hours, so ~1 match per order at every size) and runs the query once
from an empty checkpoint. It prints per run: the rate and wall time, the peak RSS of Spark's Python
workers (one process, and all of them together at one sample: `common.WorkerMemory`), and the
tasks' state as last committed (pickled runtimes, key-group pages, the checkpoint's state
directory on disk: `common.state_size`); then each figure's growth against the first factor, so
linear growth reads as the factor itself. The workers' RSS together is sampled during each run
alone; one process's VmHWM is its high-water mark, which for a worker Spark reuses also covers the
runs before (so it never falls from one factor to the next).

Usage: python bench/growth.py [--events 1000000] [--factors 1,2,4] [--only a|b] [--table-keys N]
`--table-keys 250000` makes the enrichment's table 1M keys at x4 (`--only a --factors 1
--table-keys 1000000`: that table alone). At 1M events the factors 1, 2 and 4 read 7M events per
workload.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from common import Measured, WorkerMemory, bench_session, load_average, mb, measured_streamjoin, warm_up
from stream_joins import PARTITIONS, Inputs, check_read, enrichment_inputs, interval_inputs


@dataclass(frozen=True)
class Point:
    factor: int
    run: Measured


def measure(bench, inputs: Inputs, factor: int) -> Point:
    run = measured_streamjoin(bench, inputs.queries)
    check_read(run.timed, inputs.produced)
    return Point(factor, run)


def peak_one(memory: WorkerMemory) -> int:
    return max((hwm for hwm, _ in memory.kinds.values()), default=0)


def ratio(now: float, then: float) -> str:
    return f"{now / then:.2f}x" if then else "-"


def report(label: str, points: list[Point]) -> None:
    print(label)
    for point in points:
        timed, state = point.run.timed, point.run.state
        print(f"  x{point.factor}: {timed.input_records:,} in, {timed.output_records:,} out, {timed.seconds:,.1f} s, "
              f"{timed.rate:,.0f} events/s; Python workers' RSS at peak {mb(point.run.memory.peak_total)} together, "
              f"{mb(peak_one(point.run.memory))} in one process (VmHWM); state {mb(state.runtimes + state.pages)} "
              f"({state.page_count:,} pages), {mb(state.on_disk)} on disk")
    base = points[0]
    for point in points[1:]:
        now, then = growth_figures(point.run), growth_figures(base.run)
        print(f"  x{point.factor} against x{base.factor} (input {point.factor / base.factor:g}x): "
              + ", ".join(f"{name} {ratio(now[name], then[name])}" for name in now))


def growth_figures(run: Measured) -> dict[str, float]:
    """What `report` sets against the first factor's run."""
    return {"time": run.timed.seconds, "workers' RSS together": run.memory.peak_total,
            "one process": peak_one(run.memory), "state": run.state.runtimes + run.state.pages,
            "on disk": run.state.on_disk}


def main() -> None:
    from streamjoin.settings import Settings

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="events at factor 1")
    parser.add_argument("--factors", default="1,2,4", help="comma-separated multiples of --events")
    parser.add_argument("--only", choices=("a", "b"), help="run one of the two workloads")
    parser.add_argument("--table-keys", type=int, help="(a) the table's keys at factor 1 (default events/10)")
    args = parser.parse_args()
    factors = [int(f) for f in args.factors.split(",")]
    with bench_session("streamjoin-bench-growth") as bench:
        print(f"broker {bench.bootstrap}; {PARTITIONS} partitions per topic; streamjoin reads with "
              f"{Settings.from_env().kafka_source.value!r}; factors {factors} of {args.events:,} events; "
              f"{load_average()}")
        warm_up(bench)
        keys = args.table_keys or max(args.events // 10, 1)
        workloads = {
            "a": (f"(a) stream-table LEFT JOIN enrichment, {args.events:,} events x {keys:,}-key table at x1",
                  lambda k: enrichment_inputs(bench, args.events * k, keys * k, f"_x{k}")),
            "b": (f"(b) stream-stream INNER JOIN WITHIN 1 HOURS, {args.events:,} events at x1",
                  lambda k: interval_inputs(bench, args.events * k, f"_x{k}")),
        }
        for name, (label, inputs) in workloads.items():
            if args.only in (None, name):
                report(label, [measure(bench, inputs(k), k) for k in factors])
        print(f"done; {load_average()}")


if __name__ == "__main__":
    main()
