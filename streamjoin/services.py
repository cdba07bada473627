"""Background processes the project starts for itself (the embedded broker, the shared Spark
Connect server): a free loopback port, a state file under STREAMJOIN_HOME naming the process, and
a stop that a later process can do from that file.

A service started `detached` outlives the process that started it (the CLI, `make ui`); else it
gets SIGTERM when that process dies (Linux PR_SET_PDEATHSIG), so a killed test session leaves
nothing behind.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

STOP_TIMEOUT_S = 5.0

# Services started by this process: waited on after stopping so they do not linger as zombies
# (a zombie's PID still answers os.kill(pid, 0)).
_children: dict[int, subprocess.Popen] = {}


@dataclass(frozen=True)
class ServiceState:
    pid: int
    port: int
    log_path: str


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def is_running(pid: int, marker: bytes) -> bool:
    """True when `pid` is a live (not zombie) process whose command line holds `marker`: a PID
    the system gave to another program since is not ours."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            state = stat.read().rsplit(")", 1)[1].split()[0]
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X") and marker in cmdline


def recorded(state_file: Path, marker: bytes) -> ServiceState | None:
    """The service `state_file` names, if it still runs."""
    try:
        state = ServiceState(**json.loads(state_file.read_text()))
    except (FileNotFoundError, json.JSONDecodeError, TypeError):
        return None
    return state if is_running(state.pid, marker) else None


def record(state_file: Path, state: ServiceState) -> None:
    state_file.write_text(json.dumps(asdict(state)))


def launch(args: list[str], log_path: Path, detached: bool, env: dict[str, str] | None = None) -> subprocess.Popen:
    """`args` in the background, output appended to `log_path`."""
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
            start_new_session=detached,  # detached: immune to the terminal's signals too
            preexec_fn=None if detached or sys.platform != "linux" else _die_with_parent)
    _children[process.pid] = process
    return process


def await_ready(process: subprocess.Popen, ready: Callable[[], bool], what: str, port: int, log_path: Path,
                marker: bytes, timeout_s: float, poll_s: float) -> None:
    """Returns once `ready()`; stops `process` and raises when it exits or `timeout_s` passes first."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if process.poll() is not None or time.monotonic() > deadline:
            terminate(process.pid, marker)
            raise RuntimeError(f"{what} did not start on port {port} (exit code {process.poll()}); see {log_path}")
        time.sleep(poll_s)


def _die_with_parent() -> None:
    """In the child before exec: get SIGTERM when the parent dies."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop(state_file: Path, marker: bytes) -> bool:
    """Stop the service `state_file` names (its whole process group when it leads one). False
    when none was running."""
    state = recorded(state_file, marker)
    state_file.unlink(missing_ok=True)
    if state is None:
        return False
    terminate(state.pid, marker)
    return True


def terminate(pid: int, marker: bytes) -> None:
    """SIGTERM, then SIGKILL after STOP_TIMEOUT_S; to the process group when `pid` leads one (a
    launcher script's children go too)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, sig)
            else:
                os.kill(pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while is_running(pid, marker) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not is_running(pid, marker):
            break
    child = _children.pop(pid, None)
    if child is not None:
        child.wait()
