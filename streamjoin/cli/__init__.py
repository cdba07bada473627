"""The `streamjoin` command line. Each module in `streamjoin.cli` adds its own sub-commands
through `register(subparsers)`, so features add commands without editing this file."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback

from streamjoin.runtime.records import describe


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="streamjoin", description=__doc__.split("\n")[0])
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{module.name}").register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as error:  # noqa: BLE001 - no Python traceback ever reaches a user
        # our errors (a positioned SQL error keeps its snippet) and OS errors say what happened
        message = str(error) if isinstance(error, OSError) else describe(error)
        print(f"streamjoin {args.command}: {message}", file=sys.stderr)
        if os.environ.get("STREAMJOIN_DEBUG"):
            traceback.print_exc()
        else:
            print("(set STREAMJOIN_DEBUG=1 to see where it happened)", file=sys.stderr)
        return 1

