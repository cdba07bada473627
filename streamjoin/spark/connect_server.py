"""A Spark Connect server the project starts for itself: one warm Spark for many short runs.

Every Dagster run is a new process, and a local session in it starts a JVM whose first query is
slow while the JVM warms up (measured: a 20-record batch join 11.4 s in a fresh session, 1.2 s
in a warm one; a backfill step of the demo ~30 s). `make ui` therefore starts this server once
and hands its URL to the runs (STREAMJOIN_SPARK_REMOTE): each run connects to the warm JVM.
It runs local[*] (the runs it serves share the machine's cores) with the engine's settings
(`session.session_conf`: `CONF`, the connectors, the JVM options the settings name) and its
Python workers on this interpreter, logs to
STREAMJOIN_HOME/spark-connect/server.log and records its PID and port beside it
(`streamjoin.services`), so `streamjoin spark stop` or a later process can stop it.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path

from streamjoin import services
from streamjoin.settings import Settings
from streamjoin.spark.session import python_environment, session_conf, spark_home_without_zips

READY_TIMEOUT_S = 120.0  # a JVM start on a loaded 2-core machine
MARKER = b"SparkConnectServer"  # in the server's command line
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


@dataclass(frozen=True)
class ConnectServerState(services.ServiceState):
    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"


def _state_file(settings: Settings) -> Path:
    return settings.home / "spark-connect" / "server.json"


def status(settings: Settings | None = None) -> ConnectServerState | None:
    state = services.recorded(_state_file(settings or Settings.from_env()), MARKER)
    return None if state is None else ConnectServerState(**vars(state))


def start(settings: Settings | None = None, detached: bool = True) -> ConnectServerState:
    """Start the server (or return the one already running) and wait until it takes connections.
    detached: it outlives this process (CLI, `make ui`); else it dies with it (test sessions)."""
    settings = settings or Settings.from_env()
    running = status(settings)
    if running:
        return running
    folder = _state_file(settings).parent
    folder.mkdir(parents=True, exist_ok=True)
    log_path, port = folder / "server.log", services.free_port()
    home = spark_home_without_zips(settings) or Path(os.environ["SPARK_HOME"])
    confs = {**session_conf(settings), "spark.connect.grpc.binding.address": "127.0.0.1",
             "spark.connect.grpc.binding.port": str(port)}
    args = [str(home / "bin" / "spark-submit"), "--master", "local[*]", "--class", SERVER_CLASS,
            *[part for key, value in confs.items() for part in ("--conf", f"{key}={value}")], "spark-internal"]
    env = {**os.environ, **python_environment(), "SPARK_HOME": str(home), "SPARK_LOCAL_IP": "127.0.0.1"}
    process = services.launch(args, log_path, detached, env)
    state = ConnectServerState(pid=process.pid, port=port, log_path=str(log_path))
    services.await_ready(process, lambda: _accepts(port), "the Spark Connect server", port, log_path, MARKER,
                         READY_TIMEOUT_S, poll_s=0.2)
    services.record(_state_file(settings), state)
    return state


def _accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
        return True
    except OSError:
        return False


def stop(settings: Settings | None = None) -> bool:
    """Stop the recorded server. False when none was running."""
    return services.stop(_state_file(settings or Settings.from_env()), MARKER)
