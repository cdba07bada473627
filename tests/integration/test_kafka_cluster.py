"""The engine on a 3-node Apache Kafka cluster on loopback (the session's `kafka_cluster`: every
node a controller voter and a broker; three replicas of every topic, two in sync) while nodes go
away (issue 35 item 3).

- Leaders lost under a running query: a continuous `streamjoin run` fed all along; the leader of
  an input partition is stopped (SIGTERM: it hands its leaderships over), started again, then the
  leader of an output partition crashes (SIGKILL). The query goes on (a run that fails is started
  again, as the restart sensor would, and counted); after one last run to the end, read
  read_committed, the output holds each input's result once, and so does the Delta table.
- All three nodes crash (SIGKILL) under a running query: the run ends with one line naming the
  bootstrap servers within the configured timeout, a restart while they are down says the same,
  and once they are back the query resumes: every record once (as tests/integration/test_outage.py
  checks on one node, stopped or frozen).
- The kill -9 loop of the queries on this cluster (>= 20 kills, some between a batch's Kafka
  commit and Spark's) is test_kill_loop.py.
"""

from __future__ import annotations

import json
import signal
import time

import pytest

from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from tests.integration.cli_runs import RunProcess, delta_rows, read_output, run_env, run_to_end, write_project
from tests.integration.outage import QUERY as PAGES, SLACK_S, SOURCES as CLICKS, TIMEOUT_S, clicks, the_one_line

pytestmark = pytest.mark.integration

PARTITIONS = 2
SOURCES = """-- dialect: ksqldb
CREATE STREAM lead_in (id STRING KEY, n INT) WITH (kafka_topic='lead_in', value_format='JSON', partitions=2);
"""
QUERY = "-- dialect: ksqldb\nCREATE STREAM lead_out AS SELECT id, n FROM lead_in EMIT CHANGES;\n"
CHUNKS, PER_CHUNK, CHUNK_EVERY_S = 12, 50, 1.0


def test_three_nodes_three_replicas(kafka_cluster):
    admin.create_topics(kafka_cluster.bootstrap, {"replicated": 1})  # the brokers' default: three
    from confluent_kafka.admin import AdminClient

    partition = AdminClient({"bootstrap.servers": kafka_cluster.bootstrap}).list_topics("replicated", timeout=20) \
        .topics["replicated"].partitions[0]
    assert len(partition.replicas) == 3 and len(partition.isrs) == 3


def test_leaders_lost_under_a_running_query(kafka_cluster, tmp_path):
    bootstrap = kafka_cluster.bootstrap
    admin.create_topics(bootstrap, {"lead_in": PARTITIONS})
    sql = write_project(tmp_path, SOURCES, {"lead_out": QUERY})
    env = run_env(tmp_path / "home", bootstrap)
    runs, stopped = [RunProcess.start(sql, "lead_out", env, "--mode", "continuous")], []
    for chunk in range(CHUNKS):
        admin.produce(bootstrap, "lead_in", [OutRecord(b"k%d" % n, json.dumps({"n": chunk * PER_CHUNK + n}).encode(),
                                                       1000 + n) for n in range(PER_CHUNK)])
        if chunk == 0:
            runs[-1].wait_for("batches=")
        if chunk == 3:  # the leader of an input partition, gracefully
            stopped.append(kafka_cluster.leader("lead_in", 0))
            kafka_cluster.stop_node(stopped[-1])
        if chunk == 7:  # the leader of an output partition, as a crash
            kafka_cluster.start_node(stopped[0])
            stopped.append(kafka_cluster.leader("LEAD_OUT", 1))
            kafka_cluster.stop_node(stopped[-1], crash=True)
        time.sleep(CHUNK_EVERY_S)
        if runs[-1].process.poll() is not None:  # failed: started again, as the restart sensor would
            runs.append(RunProcess.start(sql, "lead_out", env, "--mode", "continuous"))
    kafka_cluster.start_node(stopped[-1])
    runs[-1].process.send_signal(signal.SIGTERM)  # a continuous run stops as with Ctrl-C
    runs[-1].finish()
    last = run_to_end(sql, "lead_out", env)
    assert last.process.returncode == 0, last.text()

    output = read_output(bootstrap, "LEAD_OUT")  # read_committed; ksqlDB names the topic in capitals
    values = sorted(json.loads(r.value)["N"] for r in output.kept)
    table = sorted(row["N"] for row in delta_rows(tmp_path / "home" / "delta" / "lead_out"))
    expected = list(range(CHUNKS * PER_CHUNK))
    lost, duplicated = len(set(expected) - set(values)), output.raw - len(set(values))
    print(f"leader loss under a query: stopped nodes {stopped}, {len(expected)} records in, {output.raw} results read "
          f"read_committed, lost {lost}, duplicated {duplicated}, Delta {len(table)} rows, "
          f"{len(runs) - 1} restarts: " + "; ".join(run.stderr_lines()[0] for run in runs[:-1] if run.stderr_lines()))
    assert (values, output.raw, table) == (expected, len(expected), expected)


def test_all_nodes_down_under_a_running_query(kafka_cluster, tmp_path):
    bootstrap = kafka_cluster.bootstrap
    admin.create_topics(bootstrap, {"clicks": 2})
    sql = write_project(tmp_path, CLICKS, {"pages": PAGES})
    clicks(bootstrap, 0, 100)
    env = run_env(tmp_path / "home", bootstrap, TIMEOUT_S)
    running = RunProcess.start(sql, "pages", env, "--mode", "continuous")
    running.wait_for("input_rows=100")
    nodes = [node.node_id for node in kafka_cluster.nodes]
    for node in nodes:
        kafka_cluster.stop_node(node, crash=True)
    gone = time.monotonic()
    assert running.finish(TIMEOUT_S + SLACK_S + 30) == 1, running.text()
    line = the_one_line(running, bootstrap)
    said_after = running.err[0][0] - gone
    started = time.monotonic()
    restart = run_to_end(sql, "pages", env)
    restart_said = restart.err[0][0] - started
    assert restart.process.returncode == 1, restart.text()
    the_one_line(restart, bootstrap)
    for node in nodes:  # a quorum needs a majority: all started, then awaited
        kafka_cluster.start_node(node, wait=False)
    kafka_cluster.await_brokers(len(nodes))

    clicks(bootstrap, 100, 50)
    resumed = run_to_end(sql, "pages", env)
    assert resumed.process.returncode == 0, resumed.text()
    output = read_output(bootstrap, "PAGES")  # read_committed
    pages = sorted(json.loads(r.value)["PAGE"] for r in output.kept)
    table = sorted(row["PAGE"] for row in delta_rows(tmp_path / "home" / "delta" / "pages"))
    expected = sorted(f"p{i}" for i in range(150))
    print(f"all nodes down: '{line}' {said_after:.1f} s after the last went (timeout {TIMEOUT_S:g} s); a restart "
          f"while down said it after {restart_said:.1f} s; resumed: {len(pages)} results of 150 inputs "
          f"({output.raw} read read_committed), Delta {len(table)} rows")
    assert said_after <= TIMEOUT_S + SLACK_S and restart_said <= TIMEOUT_S + SLACK_S
    assert (pages, output.raw, table) == (expected, len(expected), expected)
