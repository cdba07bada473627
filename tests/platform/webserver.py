"""`dagster dev` for the browser tests: started in its own process group on a free port with a
temporary DAGSTER_HOME, waited for until its code location has loaded, stopped by process group
(in its own group it honours SIGTERM and stops the daemon, code server and run workers it
started)."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from streamjoin import services

READY_TIMEOUT_S = 90.0
INSTANCE_TEMPLATE = Path(__file__).resolve().parents[2] / "dagster.yaml"  # what `make ui` uses
RELOAD = """mutation Reload($location: String!) {
  reloadRepositoryLocation(repositoryLocationName: $location) { __typename } }"""
LOCATIONS = """{ workspaceOrError { ... on Workspace { locationEntries {
  name loadStatus locationOrLoadError { __typename ... on PythonError { message } } } } } }"""


@dataclass
class Webserver:
    url: str
    process: subprocess.Popen
    log_path: Path

    def graphql(self, query: str, variables: dict | None = None, timeout_s: float = 30) -> dict:
        request = urllib.request.Request(
            f"{self.url}/graphql", json.dumps({"query": query, "variables": variables or {}})
            .encode(), {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = json.load(response)
        if body.get("errors"):
            raise RuntimeError(f"GraphQL errors: {body['errors']}")
        return body["data"]

    def reload(self, location: str) -> None:
        """Reload a code location and wait until it has loaded. The mutation answers only once
        the new code server has imported the definitions, as long as a start-up load takes on
        a loaded machine (CI saw more than 10 s), so it gets the start-up's time."""
        self.graphql(RELOAD, {"location": location}, timeout_s=READY_TIMEOUT_S)
        _wait_loaded(self)

    def stop(self) -> None:
        for sig, wait_s in ((signal.SIGTERM, 20), (signal.SIGKILL, 5)):
            try:
                os.killpg(self.process.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.process.wait(wait_s)
                return
            except subprocess.TimeoutExpired:
                continue


def start(workdir: Path, target: list[str], home: Path, env: dict[str, str],
          spark_runs: int = 1) -> Webserver:
    """Start `dagster dev` on `target` (e.g. ["-w", "workspace.yaml"] or ["-f", "defs.py"]) in
    `workdir` with `make ui`'s instance (a queue; `spark_runs` Spark runs at once) and wait until
    its code location loaded."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(
        INSTANCE_TEMPLATE.read_text().replace("{spark_runs}", str(spark_runs)))
    dagster = Path(sys.executable).parent / "dagster"
    # as `make ui` does: the pool's limit in place before the queue's first dequeue
    subprocess.run([str(dagster), "instance", "concurrency", "set", "spark", str(spark_runs)],
                   env={**os.environ, **env, "DAGSTER_HOME": str(home)}, check=True,
                   stdout=subprocess.DEVNULL)
    port = services.free_port()
    log_path = home / "dagster-dev.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [str(dagster), "dev", "-h", "127.0.0.1", "-p", str(port), *target],
            cwd=workdir, env={**os.environ, **env, "DAGSTER_HOME": str(home)},
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)  # own process group: signals reach dev and its children
    server = Webserver(f"http://127.0.0.1:{port}", process, log_path)
    try:
        _wait_loaded(server)
    except BaseException:
        server.stop()
        raise
    return server


def _wait_loaded(server: Webserver) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"dagster dev exited ({server.process.returncode}); "
                               f"see {server.log_path}")
        try:
            entries = server.graphql(LOCATIONS)["workspaceOrError"]["locationEntries"]
        except OSError:
            entries = []
        if entries and all(e["loadStatus"] == "LOADED" for e in entries):
            errors = [e["locationOrLoadError"].get("message") for e in entries
                      if e["locationOrLoadError"]["__typename"] == "PythonError"]
            if errors:
                raise RuntimeError(f"code location failed to load: {errors}")
            return
        time.sleep(0.5)
    raise TimeoutError(f"dagster dev did not load within {READY_TIMEOUT_S} s; "
                       f"see {server.log_path}")
