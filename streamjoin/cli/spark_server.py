"""`streamjoin spark start|stop|status|url`: the shared Spark Connect server `make ui` hands to
its runs (`streamjoin.spark.connect_server`)."""

from __future__ import annotations

import argparse

from streamjoin.settings import Settings


def _configured(settings: Settings) -> str | None:
    """The Spark the settings name instead, if any: then the shared server is not used."""
    if settings.spark_remote:
        return f"STREAMJOIN_SPARK_REMOTE is set ({settings.spark_remote})"
    if settings.spark_master:
        return f"STREAMJOIN_SPARK_MASTER is set ({settings.spark_master})"
    return None


def _start(args: argparse.Namespace) -> int:
    from streamjoin.spark import connect_server

    settings = Settings.from_env()
    configured = _configured(settings)
    if configured:
        print(f"{configured}; the shared Spark Connect server is not used")
        return 0
    state = connect_server.start(settings)
    print(f"spark connect server running: {state.url} pid {state.pid} log {state.log_path}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from streamjoin.spark import connect_server

    print("spark connect server stopped" if connect_server.stop(Settings.from_env())
          else "no spark connect server running")
    return 0


def _status(args: argparse.Namespace) -> int:
    from streamjoin.spark import connect_server

    state = connect_server.status(Settings.from_env())
    if state is None:
        print("no spark connect server running")
        return 1
    print(f"spark connect server running: {state.url} pid {state.pid} log {state.log_path}")
    return 0


def _url(args: argparse.Namespace) -> int:
    """What STREAMJOIN_SPARK_REMOTE should say for the runs: the configured Connect URL, else the
    running shared server's; nothing (exit 1) when neither, or when a cluster master is set."""
    from streamjoin.spark import connect_server

    settings = Settings.from_env()
    if settings.spark_remote or settings.spark_master:
        print(settings.spark_remote or "")
        return 0 if settings.spark_remote else 1
    state = connect_server.status(settings)
    print(state.url if state else "")
    return 0 if state else 1


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("spark", help="start/stop/status of the shared Spark Connect server")
    actions = parser.add_subparsers(dest="spark_command", required=True)
    for name, func, help_text in (
        ("start", _start, "start the shared Spark Connect server in the background (no-op if running)"),
        ("stop", _stop, "stop the shared Spark Connect server"),
        ("status", _status, "show the server's URL; exit 1 if not running"),
        ("url", _url, "print the Spark Connect URL runs should use (empty if none)"),
    ):
        actions.add_parser(name, help=help_text).set_defaults(func=func)
