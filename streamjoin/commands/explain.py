"""`streamjoin explain FILE.sql [--dialect D]`: print the plan of every query as a topology.
The flavour comes from --dialect, else a first-line comment `-- dialect: flink`, else ksqldb.
Source DDL may be in the same file or in a sibling sources.sql."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streamjoin.catalog import Catalog
from streamjoin.dialect import FLAVOURS, StreamJoinError, declared_flavour
from streamjoin.plan import explain, plan_program


def explain_file(path: Path, dialect: str | None = None) -> str:
    text = path.read_text()
    flavour = dialect or declared_flavour(text)
    catalog = Catalog()
    sources = path.with_name("sources.sql")
    if sources.exists() and sources.resolve() != path.resolve():
        source_text = sources.read_text()
        catalog = plan_program(source_text, catalog, declared_flavour(source_text, flavour), str(sources)).catalog
    return explain(plan_program(text, catalog, flavour, str(path)))


def run(args: argparse.Namespace) -> int:
    try:
        print(explain_file(Path(args.file), args.dialect))
    except StreamJoinError as error:
        print(error, file=sys.stderr)
        return 1
    except OSError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("explain", help="print a query's plan as a topology")
    parser.add_argument("file", help="a .sql file")
    parser.add_argument("--dialect", choices=FLAVOURS, default=None, help="flavour (default: file comment, else ksqldb)")
    parser.set_defaults(func=run)
