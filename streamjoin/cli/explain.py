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
    """The logical topology of every query in the file, then how Spark runs it. The queries are
    compiled as a run compiles them, so EXPLAIN fails exactly where a run would."""
    from streamjoin.app.compiling import compile_program
    from streamjoin.app.project import SOURCES_FILE, folder_flavour, plan_file, read_sql
    from streamjoin.spark.physical import explain_physical

    if path.name == SOURCES_FILE:
        text = read_sql(path)
        return explain(plan_program(text, Catalog(), dialect or folder_flavour(path.parent, text), str(path)))
    program = plan_file(path, dialect)
    return explain(program) + "\n\n" + explain_physical(compile_program(program))


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
