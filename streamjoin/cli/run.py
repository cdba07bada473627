"""`streamjoin run SQL_DIR QUERY [--mode M] [--stop-after-s S] [--on-data-loss P]`: run one query of a
folder of SQL from its checkpoint, as a Dagster run does (`Engine.run`), without Dagster.

`available_now` (the query's declared mode unless --mode says otherwise) processes what is new
and exits; `continuous` runs until --stop-after-s or until stopped (Ctrl-C, SIGTERM), printing a
line per batch that read records. It ends with one summary line. A failure (the brokers gone,
data loss, a refused login) is one line on stderr and exit code 1. What Spark's JVM, its Python
workers and librdkafka print goes to `STREAMJOIN_HOME/logs/run-<query>.log`, not the terminal."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from streamjoin.kinds import RUN_MODES
from streamjoin.kafka.offsets import ON_DATA_LOSS


def _summary(report) -> str:
    return (f"{report.query}: input_rows={report.input_rows} output_rows={report.output_rows} "
            f"dead_letters={report.dead_letters} batches={report.batches} driver_rows={report.driver_rows} "
            f"consumer_lag={report.consumer_lag} rows_per_second={report.rows_per_second:.3g}")


def _log_elsewhere(log_path: Path) -> None:
    """Point file descriptor 2, which Spark's JVM, the Python workers it starts and librdkafka
    write to, at `log_path`; this command's own lines (sys.stderr) keep the terminal."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    terminal = os.fdopen(os.dup(2), "w", buffering=1)
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(log, 2)
    os.close(log)
    sys.stderr = terminal


def _run(args: argparse.Namespace) -> int:
    from streamjoin.app.engine import Engine
    from streamjoin.app.project import load_project
    from streamjoin.settings import Settings

    query = load_project(Path(args.sql_dir)).query(args.query)
    settings = Settings.from_env()
    log_path = settings.home / "logs" / f"run-{query.name}.log"
    print(f"{query.name}: Spark's and the Kafka clients' own output goes to {log_path}", flush=True)
    _log_elsewhere(log_path)
    # SIGTERM stops a continuous run as Ctrl-C does: the batch in flight is replayed at the next start.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    seen = {"batches": 0}

    def progress(report) -> None:
        if report.batches != seen["batches"]:
            seen["batches"] = report.batches
            print(_summary(report), flush=True)

    engine = Engine(settings)
    print(engine.output_notice(query), flush=True)
    report = engine.run(query, mode=args.mode, stop_after_s=args.stop_after_s,
                        on_progress=progress, on_data_loss=args.on_data_loss)
    print(_summary(report), flush=True)
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("run", help="run one query from its checkpoint (available_now or continuous)")
    parser.add_argument("sql_dir", help="the folder of SQL (its sources.sql and query files)")
    parser.add_argument("query", help="the query's name (its file name without .sql)")
    parser.add_argument("--mode", choices=RUN_MODES, default=None, help="default: the query's declared mode")
    parser.add_argument("--stop-after-s", type=float, default=None, help="a continuous run stops after this long")
    parser.add_argument("--on-data-loss", choices=ON_DATA_LOSS, default=None,
                        help="a checkpoint offset outside a log: fail (default: STREAMJOIN_ON_DATA_LOSS), "
                             "earliest or latest")
    parser.set_defaults(func=_run)
