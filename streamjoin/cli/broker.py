"""`streamjoin broker start|stop|status`: the embedded broker used when STREAMJOIN_KAFKA_BOOTSTRAP
is unset."""

from __future__ import annotations

import argparse
from dataclasses import replace

from streamjoin.kafka import embedded as broker
from streamjoin.settings import BrokerKind, Settings


def _start(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    if settings.kafka_bootstrap:
        print(f"STREAMJOIN_KAFKA_BOOTSTRAP is set ({settings.kafka_bootstrap}); "
              "the embedded broker is not used")
        return 0
    if args.kind:
        settings = replace(settings, broker_kind=BrokerKind(args.kind))
    state = broker.start(settings)
    if state.kind is not settings.broker_kind:
        print(f"a {state.description} broker is already running; stop it first to start {settings.broker_kind.value}")
    print(f"broker running: {state.description}, bootstrap {state.bootstrap} pid {state.pid} log {state.log_path}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    print("broker stopped" if broker.stop(Settings.from_env()) else "no embedded broker running")
    return 0


def _status(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    state = broker.status(settings)
    if state is None:
        print("no embedded broker running")
        return 1
    health = "answering" if broker.answers(state.bootstrap, settings=settings) else "NOT answering"
    print(f"broker running ({health}): {state.description}, bootstrap {state.bootstrap} pid {state.pid} "
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
        action = actions.add_parser(name, help=help_text)
        action.set_defaults(func=func)
        if name == "start":
            action.add_argument("--kind", choices=[kind.value for kind in BrokerKind],
                                help="Apache Kafka (KRaft, jars from Maven Central) or Tansu; default: "
                                     "STREAMJOIN_BROKER_KIND, else kafka")
