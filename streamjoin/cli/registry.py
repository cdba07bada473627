"""`streamjoin registry start [--kind apicurio|streamjoin]|stop|status`: the schema registry the
project runs (streamjoin.registry: the project's own by default, or Apicurio Registry), used by
the AVRO, PROTOBUF and JSON_SR formats when STREAMJOIN_SCHEMA_REGISTRY_URL is unset."""

from __future__ import annotations

import argparse
import dataclasses

from streamjoin.registry import service
from streamjoin.settings import RegistryKind, Settings


def _start(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    if args.kind:
        settings = dataclasses.replace(settings, registry_kind=RegistryKind(args.kind))
    if settings.schema_registry_url:
        print(f"STREAMJOIN_SCHEMA_REGISTRY_URL is set ({settings.schema_registry_url}); the project's registry is not used")
        return 0
    state = service.start(settings)
    print(f"schema registry running: {state.url} ({state.kind.value}) pid {state.pid} log {state.log_path}")
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
    print(f"schema registry running ({health}): {state.url} ({state.kind.value}) pid {state.pid} log {state.log_path}")
    return 0 if health == "answering" else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("registry", help="start/stop/status of the project's schema registry")
    actions = parser.add_subparsers(dest="registry_command", required=True)
    start = actions.add_parser("start", help="start the schema registry in the background (no-op if running)")
    start.add_argument("--kind", choices=[kind.value for kind in RegistryKind],
                       help="which registry (default: STREAMJOIN_REGISTRY_KIND, else streamjoin)")
    start.set_defaults(func=_start)
    for name, func, help_text in (
        ("stop", _stop, "stop the schema registry"),
        ("status", _status, "show the schema registry's kind and URL; exit 1 if not running"),
    ):
        actions.add_parser(name, help=help_text).set_defaults(func=func)
