"""The schema registry as a background service, like the embedded broker: a free loopback port,
a state file and log under STREAMJOIN_HOME/registry/, a stop that a later process can do from that
file (`streamjoin registry start|stop|status`). Used when no STREAMJOIN_SCHEMA_REGISTRY_URL is
configured. Its kind (STREAMJOIN_REGISTRY_KIND, settings.RegistryKind): Apicurio Registry
(`apicurio.py`, built from Maven Central on first use; schemas in memory) or the project's own
(`server.py`; schemas persist in STREAMJOIN_HOME/registry/schemas.json)."""

from __future__ import annotations

import shutil
import sys
import tempfile
import urllib.error
from contextlib import contextmanager
from dataclasses import replace
from typing import Iterator
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from streamjoin import services
from streamjoin.registry import apicurio
from streamjoin.serde.registry_codecs import Registry, configure
from streamjoin.settings import RegistryKind, Settings

MARKER = b"streamjoin.registry.server"
# Per kind: the marker on its command line, the path of its Confluent-compatible API, how long its
# start may take (Apicurio's JVM: ~15 s on a busy machine; its first build is done before this wait).
MARKERS = {RegistryKind.STREAMJOIN: MARKER, RegistryKind.APICURIO: apicurio.MARKER}
API_PATHS = {RegistryKind.STREAMJOIN: "", RegistryKind.APICURIO: apicurio.CCOMPAT_PATH}
READY_TIMEOUTS_S = {RegistryKind.STREAMJOIN: 30.0, RegistryKind.APICURIO: 120.0}


@dataclass(frozen=True)
class RegistryState(services.ServiceState):
    kind: RegistryKind = RegistryKind.STREAMJOIN

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{API_PATHS[self.kind]}"


def _state_dir(settings: Settings) -> Path:
    return settings.home / "registry"


def status(settings: Settings) -> RegistryState | None:
    """The registry running, of whichever kind its command line's marker says."""
    for kind, marker in MARKERS.items():
        state = services.recorded(_state_dir(settings) / "registry.json", marker)
        if state is not None:
            return RegistryState(state.pid, state.port, state.log_path, kind)
    return None


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
    port, kind = services.free_port(), settings.registry_kind
    process = services.launch(_command(kind, port, store or state_dir / "schemas.json"), log_path, detached)
    state = RegistryState(process.pid, port, str(log_path), kind)
    services.await_ready(process, lambda: answers(state.url), f"schema registry ({kind.value})", port, log_path,
                         MARKERS[kind], READY_TIMEOUTS_S[kind], poll_s=0.05)
    services.record(state_dir / "registry.json", services.ServiceState(state.pid, state.port, state.log_path))
    return state


def _command(kind: RegistryKind, port: int, store: Path) -> list[str]:
    """The registry's command line (Apicurio's: built first if need be; it keeps no `store`)."""
    if kind is RegistryKind.APICURIO:
        return apicurio.command(port)
    return [sys.executable, "-m", "streamjoin.registry.server", "--port", str(port), "--store", str(store)]


def stop(settings: Settings) -> bool:
    running = status(settings)
    if running is None:
        (_state_dir(settings) / "registry.json").unlink(missing_ok=True)
        return False
    return services.stop(_state_dir(settings) / "registry.json", MARKERS[running.kind])


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


@contextmanager
def private_registry(settings: Settings) -> Iterator[Registry]:
    """The configured registry, else one of the project's own for this process alone (its state in
    a temporary home, stopped at the end, dying with the process): a run of cases that nothing else
    stops or fills. Made the default of this process's SerdeSpecs."""
    if settings.schema_registry_url:
        yield ensure(settings)
        return
    own = replace(settings, home=Path(tempfile.mkdtemp(prefix="streamjoin-registry-")))
    state = start(own, detached=False)
    registry = Registry(state.url)
    configure(registry)
    try:
        yield registry
    finally:
        stop(own)
        shutil.rmtree(own.home, ignore_errors=True)
