"""Beyond local Spark: a join through the real path (session broker → Spark → topic, checked
against the conformance case's expected output) on a Spark standalone cluster — a master and a
worker started here on loopback, in their own process groups — and through the session's Spark
Connect server. Each runs `streamjoin run-cases` in a subprocess: a process holds one
SparkContext, and this one may hold the session's local one."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import pyspark
import pytest

from tests.paths import CONFORMANCE, REPO

pytestmark = pytest.mark.integration
SPARK_HOME = Path(pyspark.__file__).parent
CASE = "ksqldb.stream_table.left"  # stateful: the join's state lives on the executors
START_TIMEOUT_S = 90.0
RUN_TIMEOUT_S = 300.0


def spark_env(tmp_path: Path) -> dict[str, str]:
    """Spark's scripts from the pyspark package; Python workers run this interpreter and import
    this checkout (PYTHONPATH reaches the executors through the worker's environment)."""
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(tmp_path / "logs"),
            "SPARK_WORKER_DIR": str(tmp_path / "work"), "PYTHONPATH": str(REPO),
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}


@contextmanager
def started(args: list[str], env: dict, log: Path):
    """A Spark process in its own process group, stopped (TERM, then KILL) on the way out."""
    with open(log, "ab") as out:
        process = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        yield process
    finally:
        for sig, wait_s in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
            try:
                os.killpg(process.pid, sig)
                process.wait(wait_s)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue


def wait_until(check, what: str, log: Path):
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            if result := check():
                return result
        except OSError:
            pass
        time.sleep(1)
    pytest.fail(f"{what} not ready within {START_TIMEOUT_S:.0f} s; log:\n{log.read_text()[-3000:]}")


def run_cases(env: dict, home: Path) -> str:
    """`streamjoin run-cases` of CASE; its output (asserted to pass)."""
    result = subprocess.run(
        [sys.executable, "-m", "streamjoin", "run-cases", str(CONFORMANCE / "ksqldb_joins.json"),
         "--only", CASE, "--parallel", "1"],
        env={**env, "STREAMJOIN_HOME": str(home)}, cwd=REPO, capture_output=True, text=True,
        timeout=RUN_TIMEOUT_S)
    output = result.stdout + result.stderr
    assert result.returncode == 0 and f"PASS {CASE}" in result.stdout, output[-4000:]
    return result.stdout


def bound_port(log: Path, service: str) -> int | None:
    """The port a Spark daemon bound `service` to, from its log. Every port is chosen by the
    daemon itself (port 0): a port picked here and bound there later can be taken in between."""
    found = re.search(rf"started service '{service}' on port (\d+)", log.read_text())
    return int(found.group(1)) if found else None


def master_state(webui: int) -> dict:
    with urllib.request.urlopen(f"http://127.0.0.1:{webui}/json/", timeout=5) as response:
        return json.load(response)


def test_join_on_a_standalone_cluster(kafka_bootstrap, tmp_path):
    env = spark_env(tmp_path)
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    master_log, worker_log = tmp_path / "master.log", tmp_path / "worker.log"
    master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", "0", "--webui-port", "0"]
    with started(master, env, master_log):
        port = wait_until(lambda: bound_port(master_log, "sparkMaster"), "the master", master_log)
        webui = wait_until(lambda: bound_port(master_log, "MasterUI"), "the master's UI", master_log)
        worker = [spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                  "--cores", "2", "--memory", "2g", "--webui-port", "0",
                  f"spark://127.0.0.1:{port}"]
        with started(worker, env, worker_log):
            wait_until(lambda: master_state(webui)["aliveworkers"] == 1, "the worker", worker_log)
            output = run_cases({**env, "STREAMJOIN_SPARK_MASTER": f"spark://127.0.0.1:{port}",
                                "STREAMJOIN_KAFKA_BOOTSTRAP": kafka_bootstrap}, tmp_path / "home")
            state = master_state(webui)
    apps = [app["name"] for app in state["activeapps"] + state["completedapps"]]
    assert "streamjoin-cases" in apps  # the join ran on the cluster's executors
    print(output.strip().splitlines()[-1], f"on spark://127.0.0.1:{port}")


def test_join_through_spark_connect(kafka_bootstrap, spark_connect, tmp_path):
    """On the session's Connect server, the one `make ui` would start (the UI tests' runs use it too)."""
    log = Path(spark_connect.log_path)
    logged = log.stat().st_size
    output = run_cases({**spark_env(tmp_path), "STREAMJOIN_SPARK_REMOTE": spark_connect.url,
                        "STREAMJOIN_KAFKA_BOOTSTRAP": kafka_bootstrap}, tmp_path / "home")
    # The server, not a local session, ran the streaming query.
    with open(log, "rb") as server_log:
        server_log.seek(logged)
        assert b"SparkConnectStreamingQueryCache: Adding new query" in server_log.read()
    print(output.strip().splitlines()[-1], f"through {spark_connect.url}")
