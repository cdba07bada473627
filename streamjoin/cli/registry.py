"""`streamjoin registry start|stop|status`: the project's own schema registry (streamjoin.registry),
used by the AVRO, PROTOBUF and JSON_SR formats when STREAMJOIN_SCHEMA_REGISTRY_URL is unset."""

from __future__ import annotations

import argparse

from streamjoin.registry import service
from streamjoin.settings import Settings


def _start(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    if settings.schema_registry_url:
        print(f"STREAMJOIN_SCHEMA_REGISTRY_URL is set ({settings.schema_registry_url}); the project's registry is not used")
        return 0
    state = service.start(settings)
    print(f"schema registry running: {state.url} pid {state.pid} log {state.log_path}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    print("schema registry stopped" if service.stop(Settings.from_env()) else "no schema registry running")
    return 0


def _status(args: argparse.Namespace) -> int:
    state = service.status(Settings.from_env())
    if state is None:
        print("no schema registry running")
        return 1
    health = "answering" if service.answers(state.url) else "NOT answering"
    print(f"schema registry running ({health}): {state.url} pid {state.pid} log {state.log_path}")
    return 0 if health == "answering" else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("registry", help="start/stop/status of the project's schema registry")
    actions = parser.add_subparsers(dest="registry_command", required=True)
    for name, func, help_text in (
        ("start", _start, "start the schema registry in the background (no-op if running)"),
        ("stop", _stop, "stop the schema registry"),
        ("status", _status, "show the schema registry's URL; exit 1 if not running"),
    ):
        actions.add_parser(name, help=help_text).set_defaults(func=func)
