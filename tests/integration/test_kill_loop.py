"""kill -9 of running queries, over and over (issue 41's done-when; issue 35's, on a 3-node Apache
Kafka cluster: three replicas, two in sync): two continuous queries that share nothing but the
brokers (their own SQL folders, checkpoints and Delta roots; their own topics) run as `streamjoin
run` processes while their inputs keep coming; each process group is killed with SIGKILL at a
random point (during its start, or a moment after a batch it committed: mid-batch, between
batches, or between a batch's Kafka commit and Spark's, which each kill's checkpoint and markers
tell and the figures count), and started again, at least KILLS times in all. Then
each catches up once and what it wrote is read back: the output topic, read `read_committed`
(librdkafka's default), holds exactly the results of the inputs, each once (the broker is Apache
Kafka: the tasks write in transactions, exactly-once, so the documented dedupe has nothing to drop),
and the Delta table holds each result once (0 lost, 0 duplicated)."""

from __future__ import annotations

import json
import os
import random
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from streamjoin.kafka.transactions import marker_topic
from tests.integration.cli_runs import RUN_TIMEOUT_S, RunProcess, delta_rows, read_output, run_env, write_project

pytestmark = pytest.mark.integration

KILLS = 20  # in all, over both queries
USERS = 40
CHUNK, CHUNK_EVERY_S = 25, 0.5  # input records per topic and pause, while the kills go on
TO_A_BATCH = 0.5  # the share of lives that run to their first committed batch, killed this soon after:
KILL_WITHIN_S = 3.0  # mid-batch, between batches, or between a batch's Kafka commit and Spark's;
LIFE_S = (4.0, 24.0)  # the others end at a random moment in this range after their start

ENRICH_SOURCES = """-- dialect: ksqldb
CREATE STREAM pageviews (userid STRING KEY, viewtime BIGINT, pageid STRING)
  WITH (kafka_topic='pageviews', value_format='JSON', partitions=2);
CREATE TABLE users (userid STRING PRIMARY KEY, regionid STRING)
  WITH (kafka_topic='users', value_format='JSON', partitions=2);
"""
ENRICH = """-- dialect: ksqldb
CREATE STREAM enriched AS
  SELECT users.userid AS userid, pageid, regionid
  FROM pageviews LEFT JOIN users ON pageviews.userid = users.userid
  EMIT CHANGES;
"""
FILTER_SOURCES = """-- dialect: ksqldb
CREATE STREAM orders (id INT KEY, itemid STRING, amount DOUBLE)
  WITH (kafka_topic='orders', value_format='JSON', partitions=2);
"""
FILTER = "-- dialect: ksqldb\nCREATE STREAM big_orders AS SELECT id, itemid, amount FROM orders WHERE amount >= 50 EMIT CHANGES;\n"


def region(user: int) -> str:
    return f"region{user % 9}"


@dataclass
class Inputs:
    """What has been produced so far, and each query's expected results (computed here from the
    inputs, by the queries' meaning: every page view with its user's region; the orders of 50
    and more)."""

    bootstrap: str
    views: int = 0
    orders: int = 0
    expected: dict[str, list] = field(default_factory=lambda: {"enriched": [], "big_orders": []})

    def users(self) -> None:
        admin.produce(self.bootstrap, "users", [OutRecord(f"user{u}".encode(), json.dumps(
            {"regionid": region(u)}).encode(), 1000) for u in range(USERS)])

    def chunk(self) -> None:
        views = range(self.views, self.views + CHUNK)
        admin.produce(self.bootstrap, "pageviews", [OutRecord(f"user{i % USERS}".encode(), json.dumps(
            {"viewtime": i, "pageid": f"page{i}"}).encode(), 10_000 + i) for i in views])
        orders = range(self.orders, self.orders + CHUNK)
        admin.produce(self.bootstrap, "orders", [OutRecord((i).to_bytes(4, "big"), json.dumps(
            {"itemid": f"item{i}", "amount": i % 100}).encode(), 10_000 + i) for i in orders])
        self.expected["enriched"] += [(f"page{i}", region(i % USERS)) for i in views]
        self.expected["big_orders"] += [(f"item{i}", float(i % 100)) for i in orders if i % 100 >= 50]
        self.views, self.orders = self.views + CHUNK, self.orders + CHUNK


@dataclass
class Killed:
    """One query's life under the kill loop: its project, its environment, its kills."""

    name: str
    sql: Path
    env: dict
    kills: int = 0
    after_a_batch: int = 0  # kills of a life that had committed a batch
    between_commits: int = 0  # kills after a batch's Kafka commit, before Spark's
    lives: list = field(default_factory=list)
    first_batch: threading.Event = field(default_factory=threading.Event)

    def live_and_die(self, rng: random.Random) -> None:
        """One life: started, then SIGKILL to its whole process group (the Spark JVM and its
        Python workers go with the driver) soon after its first committed batch, or at a random
        moment (of its start, most often)."""
        run = RunProcess.start(self.sql, self.name, self.env, "--mode", "continuous", new_session=True)
        try:
            # A query's first life lives to its first batch (the table is read before any view).
            to_a_batch = not self.first_batch.is_set() or rng.random() < TO_A_BATCH
            life_s = RUN_TIMEOUT_S if to_a_batch else rng.uniform(*LIFE_S)
            if run.wait_for("batches=", life_s, required=to_a_batch) is not None:
                self.first_batch.set()
                self.after_a_batch += 1
                time.sleep(rng.uniform(0, KILL_WITHIN_S))
        finally:
            os.killpg(run.process.pid, signal.SIGKILL)
            run.finish(30)
        self.kills += 1
        self.between_commits += between_the_commits(self.name, Path(self.env["STREAMJOIN_HOME"]),
                                                    self.env["STREAMJOIN_KAFKA_BOOTSTRAP"])
        self.lives.append(run)


def between_the_commits(query: str, home: Path, bootstrap: str) -> bool:
    """Whether a kill left the last planned batch committed in Kafka (a task's marker of it, of
    this checkpoint's writer) but not in Spark's checkpoint (no `commits/<batch>`)."""
    steps = list((home / "checkpoints" / query).glob("*/offsets"))
    if len(steps) != 1:
        return False
    step = steps[0].parent
    planned = [int(p.name) for p in steps[0].iterdir() if p.name.isdigit()]
    if not planned or (step / "commits" / str(max(planned))).exists():
        return False
    writer = f"{step.name}@{json.loads((step / 'streamjoin-checkpoint.json').read_text())['replay_epoch']}"
    topic = marker_topic(query, step.name)
    if topic not in admin.list_topics(bootstrap):
        return False
    markers = [json.loads(m.value) for m in admin.read_all(bootstrap, topic)]  # read_committed
    return any(m["writer"] == writer and m["batch"] == max(planned) for m in markers)


def kill_loop(queries: list[Killed], inputs: Inputs, rng: random.Random) -> None:
    """Inputs keep coming while the queries are killed in turn, until KILLS kills in all."""
    done = threading.Event()

    def produce() -> None:
        # The first query's table (users) is read before any page view: each view finds its user.
        while not (queries[0].first_batch.wait(0.5) or done.is_set()):
            pass
        while not done.is_set():
            inputs.chunk()
            time.sleep(CHUNK_EVERY_S)

    failures: list[BaseException] = []

    def lives(query: Killed, share: int) -> None:
        try:
            while query.kills < share:
                query.live_and_die(rng)
        except BaseException as error:  # noqa: BLE001 - raised in the test's thread below
            failures.append(error)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    shares = [KILLS // len(queries) + (i < KILLS % len(queries)) for i in range(len(queries))]
    workers = [threading.Thread(target=lives, args=(q, s)) for q, s in zip(queries, shares)]
    try:
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    finally:
        done.set()
        producer.join()
    if failures:
        raise failures[0]
    assert sum(query.kills for query in queries) >= KILLS

def results(bootstrap: str, query: str, home: Path) -> tuple[list, list, int, int]:
    """(results after the dedupe, Delta rows, raw records, copies dropped without a replay id)."""
    topic = query.upper()  # ksqlDB names the stream, and its topic, in capitals
    fields = {"enriched": ("PAGEID", "REGIONID"), "big_orders": ("ITEMID", "AMOUNT")}[query]
    read = read_output(bootstrap, topic)
    kafka = sorted(tuple(json.loads(r.value)[f] for f in fields) for r in read.kept)
    table = sorted(tuple(row[f] for f in fields) for row in delta_rows(home / "delta" / query))
    return kafka, table, read.raw, read.duplicates_without_id


def test_kill_9_loop_two_queries_lose_and_duplicate_nothing(kafka_cluster, tmp_path):
    rng = random.Random(os.environ.get("STREAMJOIN_KILL_SEED") or time.time_ns())
    bootstrap = kafka_cluster.bootstrap
    admin.create_topics(bootstrap, {"pageviews": 2, "users": 2, "orders": 2})  # three replicas each
    inputs = Inputs(bootstrap)
    inputs.users()
    queries = [Killed(name, write_project(tmp_path / name, sources, {name: text}),
                      run_env(tmp_path / name / "home", bootstrap))
               for name, sources, text in (("enriched", ENRICH_SOURCES, ENRICH),
                                           ("big_orders", FILTER_SOURCES, FILTER))]
    started = time.monotonic()
    kill_loop(queries, inputs, rng)
    lasts = [RunProcess.start(q.sql, q.name, q.env, "--mode", "available_now") for q in queries]
    for last in lasts:  # one last life each, side by side, to the end of the inputs
        assert last.finish() == 0, last.text()
    figures = []
    for query in queries:
        kafka, table, raw, without_id = results(bootstrap, query.name, Path(query.env["STREAMJOIN_HOME"]))
        expected = sorted(inputs.expected[query.name])
        lost = len(set(expected) - set(kafka))
        assert (kafka, without_id) == (expected, 0), f"{query.name}: {lost} lost in Kafka"
        assert raw == len(expected), f"{query.name}: {raw - len(expected)} duplicated, read read_committed"
        assert table == expected, f"{query.name}: Delta {len(table)} rows for {len(expected)} results"
        figures.append(f"{query.name}: {query.kills} kills ({query.after_a_batch} after a committed batch, "
                       f"{query.between_commits} between a batch's Kafka commit and Spark's), {len(expected)} "
                       f"results, {raw} read read_committed (0 duplicated), Delta {len(table)} rows, 0 lost, "
                       "0 duplicated")
    print(f"kill -9 loop on {bootstrap} (3 nodes): {sum(q.kills for q in queries)} kills in "
          f"{time.monotonic() - started:.0f} s, {inputs.views + USERS} + {inputs.orders} records in; "
          + "; ".join(figures))
