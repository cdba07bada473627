"""`streamjoin broker start|stop|status`: the embedded broker used when STREAMJOIN_KAFKA_BOOTSTRAP
is unset."""

from __future__ import annotations

import argparse

from streamjoin.kafka import embedded as broker
from streamjoin.settings import Settings


def _start(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    if settings.kafka_bootstrap:
        print(f"STREAMJOIN_KAFKA_BOOTSTRAP is set ({settings.kafka_bootstrap}); "
              "the embedded broker is not used")
        return 0
    state = broker.start(settings)
    print(f"broker running: bootstrap {state.bootstrap} pid {state.pid} log {state.log_path}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    print("broker stopped" if broker.stop(Settings.from_env()) else "no embedded broker running")
    return 0


def _status(args: argparse.Namespace) -> int:
    state = broker.status(Settings.from_env())
    if state is None:
        print("no embedded broker running")
        return 1
    health = "answering" if broker.answers(state.bootstrap) else "NOT answering"
    print(f"broker running ({health}): bootstrap {state.bootstrap} pid {state.pid} "
          f"log {state.log_path}")
    return 0 if health == "answering" else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("broker", help="start/stop/status of the embedded Kafka broker")
    actions = parser.add_subparsers(dest="broker_command", required=True)
    for name, func, help_text in (
        ("start", _start, "start the embedded broker in the background (no-op if running)"),
        ("stop", _stop, "stop the embedded broker"),
        ("status", _status, "show the embedded broker's bootstrap address; exit 1 if not running"),
    ):
        actions.add_parser(name, help=help_text).set_defaults(func=func)
