"""What a Python worker of ours imports. Spark unpickles the `streamjoin_kafka` data source in
every planning process, its readers and writers in every task worker, and the task processor in
every transformWithStateInPandas worker: kafka-python (the admin client), sqlglot (the SQL
dialect) and pandas cost ~0.3-0.85 s of CPU each there, so none of them may come with these
imports. The task processor's module brings no pyarrow either: Spark's state schema check at every
query start imports it for nothing else (~0.25 s with numpy), and the data source's module brings
the planning process its offset lookups (librdkafka) but not the data path's pyarrow.compute.
The worker daemon imports the task modules before it forks, so it may import nothing that starts a
thread: pandas, pyarrow and numpy start native ones. Each case runs in a fresh interpreter."""

from __future__ import annotations

import pickle
import subprocess
import sys
from dataclasses import dataclass

import pytest

from tests.paths import REPO

HEAVY = ("kafka", "sqlglot", "pandas")


@dataclass(frozen=True)
class Case:
    name: str
    code: str  # runs with the pickled (reader, writer) of `shipped()` on stdin
    absent: tuple[str, ...] = HEAVY


CASES = [
    # What the driver's planning process of every query start loads: the data path (the sink, the
    # range reader) and its pyarrow.compute only come with a writer or a read task.
    Case("data source", "import streamjoin.spark.kafka_datasource",
         absent=HEAVY + ("pyarrow.compute", "streamjoin.kafka.rdkafka", "streamjoin.spark.kafka_sink")),
    Case("task processor", "import streamjoin.spark.adapter", absent=HEAVY + ("pyarrow",)),
    # What the daemon imports before it forks; its one thread (counted by the kernel) is checked.
    Case("worker daemon", "import os, streamjoin.spark.daemon\n"
                          "assert len(os.listdir('/proc/self/task')) == 1, 'a thread was started'",
         absent=("pandas", "pyarrow", "numpy")),
    Case("unpickled reader and writer", "import pickle; pickle.loads(sys.stdin.buffer.read())"),
    # A read task's work without a broker: an empty range, then its end-of-input marker. pyarrow
    # itself imports pandas the first time it converts Python lists, so only the other two count.
    Case("read task", "import pickle\n"
                      "from streamjoin.spark.kafka_source import KafkaRange\n"
                      "reader, _ = pickle.loads(sys.stdin.buffer.read())\n"
                      "assert len(list(reader.read(KafkaRange('t', 0, 5, 5, end_marker=True)))) == 1",
         absent=("kafka", "sqlglot")),
]


def shipped() -> bytes:
    """A stream reader and writer pickled as Spark ships them to tasks (no broker is contacted)."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    from streamjoin.spark.kafka_sink import KafkaStreamWriter
    from streamjoin.spark.kafka_source import KafkaStreamReader

    options = {"kafka.bootstrap.servers": "localhost:9092", "subscribe": "t", "topic": "out",
               "streamjoin.packed": "true"}
    return pickle.dumps((KafkaStreamReader(options),
                         KafkaStreamWriter(options, StructType([StructField("value", BinaryType())]))))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_a_worker_imports_nothing_heavy(case: Case) -> None:
    code = f"import sys\n{case.code}\nprint(sorted(m for m in {case.absent!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], input=shipped(), cwd=REPO, capture_output=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().strip() == "[]"
