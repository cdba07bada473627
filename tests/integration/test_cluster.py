"""Beyond one machine: a stateful join with Kafka and Delta outputs, run as the CLI runs a query
(`streamjoin run`), on a Spark standalone cluster of three hosts, each on its own address
(`netns`: the master and two workers in their own network namespaces; the driver and an Apache
Kafka broker here, on the bridge's address), and through the session's Spark Connect server.

Each run proves from the driver's own count that no result row reached it: `driver_rows` (the
rows its batch writer took from the batches, one figures row per task and batch) stays at two a
batch, while the topic and the Delta table both hold every result. A process holds one
SparkContext, and this one may hold the session's local one, so each run is a subprocess.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pyspark
import pytest

from streamjoin import services
from streamjoin.app.project import load_project
from streamjoin.delta.tables import read_delta_arrow
from streamjoin.kafka import embedded, kraft
from streamjoin.kafka.admin import create_topics, produce, read_all
from streamjoin.kafka.records import OutRecord
from tests.integration import netns
from tests.paths import REPO

pytestmark = pytest.mark.integration
SPARK_HOME = Path(pyspark.__file__).parent
SPARK_CLASS = str(SPARK_HOME / "bin" / "spark-class")
START_TIMEOUT_S = 90.0
RUN_TIMEOUT_S = 300.0
TASKS = 2  # the inputs' partitions: one join task each
CUSTOMERS, ORDERS = 50, 400
SOURCES = """-- dialect: ksqldb
CREATE TABLE customers (id STRING PRIMARY KEY, name STRING)
  WITH (kafka_topic='{prefix}-customers', value_format='JSON', partitions=2);
CREATE STREAM orders (id STRING KEY, amount BIGINT) WITH (kafka_topic='{prefix}-orders', value_format='JSON', partitions=2);
"""
QUERY = """-- dialect: ksqldb
CREATE STREAM {name} AS SELECT o.id AS id, o.amount AS amount, c.name AS name
  FROM orders o LEFT JOIN customers c ON o.id = c.id EMIT CHANGES;
"""


def spark_env(tmp_path: Path, address: str) -> dict[str, str]:
    """Spark's scripts from the pyspark package, bound to `address`; Python workers run this
    interpreter and import this checkout (PYTHONPATH reaches the executors through the worker's
    environment)."""
    return {**os.environ, "SPARK_HOME": str(SPARK_HOME), "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": address, "SPARK_LOG_DIR": str(tmp_path / "logs"),
            "SPARK_WORKER_DIR": str(tmp_path / "work"), "PYTHONPATH": str(REPO),
            "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}


@contextmanager
def started(args: list[str], env: dict, log: Path):
    """A process in its own process group, stopped (TERM, then KILL) on the way out."""
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


def web_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.load(response)


def project(tmp_path: Path, bootstrap: str) -> tuple[Path, str]:
    """A SQL folder with the join, its inputs produced: every order's customer is older than it."""
    prefix, name = f"cluster-{os.urandom(4).hex()}", "enriched_" + os.urandom(4).hex()
    sql = tmp_path / "sql"
    sql.mkdir()
    (sql / "sources.sql").write_text(SOURCES.format(prefix=prefix))
    (sql / f"{name}.sql").write_text(QUERY.format(name=name))
    create_topics(bootstrap, {f"{prefix}-customers": 2, f"{prefix}-orders": 2})
    produce(bootstrap, f"{prefix}-customers", [OutRecord(f"c{n}".encode(), json.dumps({"name": f"n{n}"}).encode(), 1000 + n)
                                               for n in range(CUSTOMERS)])
    produce(bootstrap, f"{prefix}-orders", [OutRecord(f"c{n % CUSTOMERS}".encode(), json.dumps({"amount": n}).encode(),
                                                      10_000 + n) for n in range(ORDERS)])
    return sql, name


def run_query(env: dict, sql: Path, name: str, home: Path) -> dict[str, float]:
    """`streamjoin run` of the query, reading with Spark's own Kafka connector (its jars reach the
    executors from the driver); the figures of its summary line."""
    result = subprocess.run([sys.executable, "-m", "streamjoin", "run", str(sql), name],
                            env={**env, "STREAMJOIN_HOME": str(home), "STREAMJOIN_KAFKA_SOURCE": "spark"},
                            cwd=REPO, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:] + _log_tail(home, name)
    summary = result.stdout.strip().splitlines()[-1]
    return {key: float(value) for key, value in re.findall(r"(\w+)=([\d.e+-]+)", summary)}


def _log_tail(home: Path, name: str) -> str:
    log = home / "logs" / f"run-{name}.log"
    return "\n" + log.read_text()[-4000:] if log.exists() else ""


def assert_both_outputs_whole_and_the_driver_took_no_result(bootstrap: str, sql: Path, name: str, home: Path,
                                                            figures: dict):
    records = read_all(bootstrap, load_project(sql).query(name).output_topic)
    table = read_delta_arrow(str(home / "delta" / name))
    assert (figures["input_rows"], figures["output_rows"]) == (CUSTOMERS + ORDERS, ORDERS), figures
    assert len(records) == table.num_rows == ORDERS  # every result in both, once
    assert table.column("NAME").null_count == 0  # each order found its customer: the join's state held
    assert 0 < figures["driver_rows"] <= TASKS * figures["batches"], figures  # figures rows only
    print(f"{len(records)} records in the topic, {table.num_rows} rows in the table; the run: {figures}")


def test_join_on_a_cluster_of_three_hosts(tmp_path):
    if why := netns.unavailable():
        pytest.skip(why)
    with netns.hosts(["master", "worker-a", "worker-b"]) as hosts, broker_on(hosts.here, tmp_path) as bootstrap:
        master_address = hosts.addresses["master"]
        master = [SPARK_CLASS, "org.apache.spark.deploy.master.Master", "--host", master_address,
                  "--port", "7077", "--webui-port", "8080"]  # its own namespace: these ports are free there
        log = tmp_path / "master.log"
        with started(hosts.command("master", master), spark_env(tmp_path / "master", master_address), log):
            ui = f"http://{master_address}:8080/json/"
            wait_until(lambda: web_json(ui), "the master", log)
            with workers(hosts, f"spark://{master_address}:7077", tmp_path):
                wait_until(lambda: web_json(ui)["aliveworkers"] == 2, "the workers", log)
                sql, name = project(tmp_path, bootstrap)
                figures = run_query({**spark_env(tmp_path, hosts.here), "STREAMJOIN_KAFKA_BOOTSTRAP": bootstrap,
                                     "STREAMJOIN_SPARK_MASTER": f"spark://{master_address}:7077"},
                                    sql, name, tmp_path / "home")
                ran_on = {host: executors(hosts.addresses[host]) for host in ("worker-a", "worker-b")}
        assert all(ran_on.values()), ran_on  # executors on both workers ran the query
        print(f"executors per worker: {ran_on}")
        assert_both_outputs_whole_and_the_driver_took_no_result(bootstrap, sql, name, tmp_path / "home", figures)


@contextmanager
def broker_on(address: str, tmp_path: Path):
    """A one-node Apache Kafka bound to and advertising `address`, which every host reaches."""
    node = kraft.Node(1, services.free_port(), services.free_port(), services.free_port(), host=address)
    (tmp_path / "broker").mkdir()
    log = tmp_path / "broker.log"
    with started(kraft.launch_args(tmp_path / "broker", node), dict(os.environ), log):
        bootstrap = f"{address}:{node.port}"
        wait_until(lambda: embedded.answers(bootstrap, 1.0), "the broker", log)
        yield bootstrap


@contextmanager
def workers(hosts: netns.Hosts, master: str, tmp_path: Path):
    """A worker (1 core) in each worker namespace, bound to its address."""
    with ExitStack() as running:
        for host in ("worker-a", "worker-b"):
            address = hosts.addresses[host]
            args = [SPARK_CLASS, "org.apache.spark.deploy.worker.Worker", "--host", address, "--cores", "1",
                    "--memory", "1g", "--webui-port", "8081", master]
            running.enter_context(started(hosts.command(host, args), spark_env(tmp_path / host, address),
                                          tmp_path / f"{host}.log"))
        yield


def executors(address: str) -> int:
    """The executors a worker ran, finished or not."""
    state = web_json(f"http://{address}:8081/json/")
    return len(state["executors"]) + len(state["finishedexecutors"])


def test_join_through_spark_connect(kafka_bootstrap, spark_connect, tmp_path):
    """On the session's Connect server, the one `make ui` would start (the UI tests' runs use it too)."""
    log = Path(spark_connect.log_path)
    logged = log.stat().st_size
    sql, name = project(tmp_path, kafka_bootstrap)
    figures = run_query({**spark_env(tmp_path, "127.0.0.1"), "STREAMJOIN_SPARK_REMOTE": spark_connect.url,
                         "STREAMJOIN_KAFKA_BOOTSTRAP": kafka_bootstrap}, sql, name, tmp_path / "home")
    with open(log, "rb") as server_log:  # the server, not a local session, ran the streaming query
        server_log.seek(logged)
        assert b"SparkConnectStreamingQueryCache: Adding new query" in server_log.read()
    assert_both_outputs_whole_and_the_driver_took_no_result(kafka_bootstrap, sql, name, tmp_path / "home", figures)
