"""`streamjoin demo`: the main job on the embedded default."""

from __future__ import annotations

from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "demo", help="broker + sample data + every join in sql/ through Spark; prints each output")
    parser.add_argument("--sql", type=Path, default=Path("sql"), help="the queries (default: sql/)")
    parser.add_argument("--samples", type=Path, default=Path("samples"), help="sample data (default: samples/)")
    parser.set_defaults(func=lambda args: _run(args))


def _run(args) -> int:
    from streamjoin.app.samples import run_demo

    return run_demo(args.sql, args.samples)
