"""`streamjoin explain FILE.sql [--dialect D]`: print the plan of every query as a topology.
The flavour comes from --dialect, else a first-line comment `-- dialect: flink`, else ksqldb.
Source DDL may be in the same file or in a sibling sources.sql."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from streamjoin.plan.catalog import Catalog
from streamjoin.dialect import FLAVOURS, StreamJoinError
from streamjoin.plan import explain, plan_program


def explain_file(path: Path, dialect: str | None = None) -> str:
    """The logical topology of every query in the file, then how Spark runs it."""
    from streamjoin.app.project import compile_file, folder_catalog, folder_flavour
    from streamjoin.spark.physical import explain_physical

    text = path.read_text()
    flavour = dialect or folder_flavour(path.parent, text)
    catalog = folder_catalog(path.parent) if path.name != "sources.sql" else Catalog()
    logical = explain(plan_program(text, catalog, flavour, str(path)))
    if not dialect and path.name != "sources.sql":
        logical += "\n\n" + explain_physical(compile_file(path))
    return logical


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
