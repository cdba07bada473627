"""The project's schema registry (`server.py`) as a background service, like the embedded broker:
a free loopback port, a state file and log under STREAMJOIN_HOME/registry/, a stop that a later
process can do from that file (`streamjoin registry start|stop|status`). Used when no
STREAMJOIN_SCHEMA_REGISTRY_URL is configured; schemas persist in STREAMJOIN_HOME/registry/schemas.json."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from streamjoin import services
from streamjoin.serde.registry_codecs import Registry, configure
from streamjoin.settings import Settings

MARKER = b"streamjoin.registry.server"
READY_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class RegistryState(services.ServiceState):
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def _state_dir(settings: Settings) -> Path:
    return settings.home / "registry"


def status(settings: Settings) -> RegistryState | None:
    state = services.recorded(_state_dir(settings) / "registry.json", MARKER)
    return None if state is None else RegistryState(state.pid, state.port, state.log_path)


def answers(url: str, timeout_s: float = 1.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url.rstrip('/')}/subjects", timeout=timeout_s) as answer:
            return answer.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start(settings: Settings, detached: bool = True, store: Path | None = None) -> RegistryState:
    """Start the registry (or return the one running) and wait until it answers. `store`: the
    schemas file (default STREAMJOIN_HOME/registry/schemas.json)."""
    running = status(settings)
    if running is not None:
        return running
    state_dir = _state_dir(settings)
    state_dir.mkdir(parents=True, exist_ok=True)
    log_path = state_dir / "registry.log"
    port = services.free_port()
    args = [sys.executable, "-m", "streamjoin.registry.server", "--port", str(port),
            "--store", str(store or state_dir / "schemas.json")]
    process = services.launch(args, log_path, detached)
    state = RegistryState(process.pid, port, str(log_path))
    services.await_ready(process, lambda: answers(state.url), "schema registry", port, log_path, MARKER,
                         READY_TIMEOUT_S, poll_s=0.05)
    services.record(state_dir / "registry.json", services.ServiceState(state.pid, state.port, state.log_path))
    return state


def stop(settings: Settings) -> bool:
    return services.stop(_state_dir(settings) / "registry.json", MARKER)


def registry_url(settings: Settings) -> str | None:
    """The registry the engine uses: the configured one, else the project's own if it runs."""
    if settings.schema_registry_url:
        return settings.schema_registry_url
    running = status(settings)
    return None if running is None else running.url


def ensure(settings: Settings) -> Registry:
    """The registry to use: the configured one, else the project's own (started if need be), made
    the default of every SerdeSpec this process builds."""
    registry = Registry(settings.schema_registry_url or start(settings).url, settings.schema_registry_auth)
    configure(registry)
    return registry


def configure_from(settings: Settings) -> Registry | None:
    """Make the configured registry, else the project's own if it runs, the default of this
    process's SerdeSpecs (without starting one); None when there is neither."""
    url = registry_url(settings)
    registry = None if url is None else Registry(url, settings.schema_registry_auth)
    if registry is not None:
        configure(registry)
    return registry
