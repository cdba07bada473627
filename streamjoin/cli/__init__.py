"""The `streamjoin` command line. Each module in `streamjoin.cli` adds its own sub-commands
through `register(subparsers)`, so features add commands without editing this file."""

from __future__ import annotations

import argparse
import importlib
import pkgutil


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

