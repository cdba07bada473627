"""Many streaming queries start at once in the one SparkSession, on a machine kept busy: every
one must pass. Queries started together used to share one registration of the Kafka source,
whose environment map each start wrote into while other queries' tasks serialized it
(`streamjoin.spark.session.kafka_source_for_query` says why); under load every task then failed
with java.io.OptionalDataException. The race is streamjoin_kafka's, so the test that provokes it
reads with that source, whatever the default."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from dataclasses import replace

import pytest

from streamjoin.runner.cases import load_cases
from streamjoin.runner.run import CaseRunner
from streamjoin.settings import KafkaSource, Settings
from tests.paths import CONFORMANCE

pytestmark = pytest.mark.integration

# Every flavour and join shape of the suite: ksqlDB, Lenses and Flink cases, two of each.
CASES = [c for c in load_cases([CONFORMANCE]) if c.id.startswith(("ksqldb.stream_stream", "lenses.", "flink."))][:8]
AT_ONCE = 8


def test_eight_queries_at_once_beside_a_cpu_hog_all_pass(spark, kafka_bootstrap):
    assert len(CASES) == AT_ONCE
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 2)]
    runner = CaseRunner(spark, kafka_bootstrap, Settings.from_env())
    try:
        results = list(runner.run_all(CASES, parallel=AT_ONCE))
    finally:
        runner.close()
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert [r.line() for r in results if r.status != "PASS"] == []


def test_every_query_reads_through_a_registration_of_its_own(spark):
    from streamjoin.spark.session import kafka_source_for_query

    names = {kafka_source_for_query(spark) for _ in range(3)}
    assert len(names) == 3  # no environment map shared between two queries


def test_a_query_never_reads_through_a_registration_another_query_writes(spark, kafka_bootstrap):
    """Spark's Python streaming source runner writes into its registration's environment map at
    every query start. Here that map of the shared `streamjoin_kafka` registration is written over
    and over, as queries starting together did: measured before the fix, 4 of 5 queries reading
    through it failed (java.io.OptionalDataException in task deserialization). Every query of ours
    reads through a registration of its own, so none of them is touched."""
    manager = spark._jsparkSession.sessionState().dataSourceManager()
    env = manager.lookupDataSource("streamjoin_kafka").dataSourceCls().envVars()
    stop = threading.Event()

    def write_meanwhile() -> None:
        n = 0
        while not stop.is_set():
            env.put(f"STREAMJOIN_PROBE_{n % 50}", "x" * (n % 7))
            env.remove(f"STREAMJOIN_PROBE_{(n + 25) % 50}")
            n += 1

    writer = threading.Thread(target=write_meanwhile, daemon=True)
    writer.start()
    runner = CaseRunner(spark, kafka_bootstrap, replace(Settings.from_env(), kafka_source=KafkaSource.STREAMJOIN))
    try:
        results = list(runner.run_all(CASES[:5]))
    finally:
        stop.set()
        writer.join()
        runner.close()
        for n in range(50):
            env.remove(f"STREAMJOIN_PROBE_{n}")
    assert [r.line() for r in results if r.status != "PASS"] == []
