"""The engine's SparkSession: local by default, a cluster master or a Spark Connect server from
`Settings`; always with our Python data sources registered and the settings our operators need
(`CONF`, which an orchestrator building its own session passes too)."""

from __future__ import annotations

import itertools
import os
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import pyspark
from pyspark.sql import SparkSession

from streamjoin.settings import Settings
from streamjoin.spark import connectors
from streamjoin.spark.kafka_datasource import KafkaDataSource

CONF = {
    # transformWithStateInPandas needs RocksDB (the HDFS provider is unsupported for it).
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    # A batch's commit writes the changes it made (a changelog file), not a snapshot of the whole
    # RocksDB store; snapshots are taken in the background. Measured: a 5-record batch's Spark
    # job 1.32 s -> 0.99 s (bench/latency.py, loaded machine).
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    # Checkpoint files (offsets, commits, state changelogs, schemas) through Hadoop's FileSystem
    # API rather than its FileContext: without the native Hadoop library, which the pip package
    # lacks, FileContext starts a `chmod` after every create and a `readlink` before every rename.
    # Measured on 2 cores: a small query's run from start to stop used ~18% less CPU and wall.
    # Both write to a temporary file and rename it; this one checks that the target is absent
    # just before the rename, which leaves a window of microseconds where two runs writing the
    # same batch of one checkpoint could both succeed (FileContext's rename refuses the second).
    "spark.sql.streaming.checkpointFileManagerClass":
        "org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager",
    # The default 200 shuffle partitions made a local stream-stream join ~20x slower.
    "spark.sql.shuffle.partitions": "2",
    # delta-spark rebuilds a table's state (its files and the batch ids each app committed) in a
    # job of 50 tasks by default; a batch's append or MERGE needs it two or three times (the
    # schema, the skip check of a replayed batch id, the version written). Measured on 2 cores, a
    # continuous query with a Delta output: the Delta step 2.73 -> 1.00 s a batch (38 -> 91
    # batches in 45 s); a run's first write into an existing table 8.1-9.6 -> 4.3-4.7 s.
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    # Python workers start slowly on a loaded 2-core machine; the 15 s default failed queries
    # with "Python worker failed to connect back".
    "spark.python.authenticate.socketTimeout": "120s",
    # Python workers fork from a daemon that has imported the task runtime's modules (see there).
    "spark.python.daemon.module": "streamjoin.spark.daemon",
    # The Python processes Spark starts import numpy (through pyarrow and pandas; our daemon does
    # not, its forks do), whose OpenBLAS starts a thread per core that spins while it waits;
    # nothing here does linear algebra.
    # Spark passes its executorEnv to the workers and to the processes it starts without the
    # daemon (two a query start: the offset planner, the state schema check).
    "spark.executorEnv.OPENBLAS_NUM_THREADS": "1",
    # Spark keeps a worker daemon per distinct worker environment. Its SQL runners (mapInArrow:
    # the packing step, the Delta write's unpacking) add SPARK_SIMPLIFIED_TRACEBACK=1 to it, the
    # transformWithStateInPandas runner does not: every query start then started a second daemon
    # for its stateful tasks and forked them cold (~1.4 s a task on this machine). Set here, it is
    # in every worker's environment, so the tasks of both kinds share one daemon and its idle workers.
    "spark.executorEnv.SPARK_SIMPLIFIED_TRACEBACK": "1",
}


# For a session that runs many small queries and ends (case runs, the test suite): the JVM stops
# at its quick JIT tier (C1). Measured on 2 cores, conformance cases 3 at a time: the optimizing
# tier's compiler threads were half of the JVM's CPU (43.6 of 88 CPU-s), and 44 cases took
# 95-112 s instead of 114-127 s. A long-running query keeps the default: its hot loops repay C2.
QUICK_START_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"


def short_lived(settings: Settings) -> Settings:
    """`settings` for a session that runs many small queries and ends: the quick JIT tier, unless
    they name JVM options of their own."""
    if settings.spark_driver_java_options:
        return settings
    return replace(settings, spark_driver_java_options=QUICK_START_JAVA_OPTIONS)


def session_conf(settings: Settings) -> dict[str, str]:
    """`CONF`, Spark's Kafka connector and delta-spark (`connectors`), and what the settings add
    for a JVM started from this process."""
    conf = {**CONF, **connectors.conf()}
    if settings.spark_driver_java_options:
        conf["spark.driver.extraJavaOptions"] = settings.spark_driver_java_options
    return conf


def python_environment() -> dict[str, str]:
    """Workers must run this interpreter (the venv where streamjoin is installed); otherwise
    they fail with "Python worker failed to connect back"."""
    return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def prepare_session(spark: SparkSession) -> SparkSession:
    """Make any session (ours, or one an orchestrator built from `CONF`) ready for the engine:
    the streamjoin data sources registered."""
    spark.dataSource.register(KafkaDataSource)
    return spark


def kafka_source_for_query(spark: SparkSession) -> str:
    """The format name of a registration of the Kafka source for one streaming query or batch
    read alone.

    Why: every Python function Spark makes from a registered Python data source shares that
    registration's one `envVars` HashMap, and each streaming query's start writes into it on the
    driver (PythonStreamingSourceRunner.init) while other queries' tasks serialize it. Queries
    started at once from several threads corrupted the map for good, and every task after that
    failed to deserialize (java.io.OptionalDataException). A registration per query shares
    nothing; it is a few bytes in the session's registry."""
    name = f"{KafkaDataSource.name()}_{next(_registrations)}"
    spark.dataSource.register(type(name, (KafkaDataSource,), {"name": classmethod(lambda cls: name)}))
    return name


_registrations = itertools.count(1)


def spark_home_without_zips(settings: Settings) -> Path | None:
    """A SPARK_HOME for the pip-installed pyspark whose Python workers import pyspark from the
    installed package (compiled once, cached .pyc) instead of `python/lib/pyspark.zip`.

    Why: Spark puts `$SPARK_HOME/python/lib/pyspark.zip` first on every Python worker's path, and
    Python compiles modules imported from a zip on every import (no bytecode cache). Every worker,
    and the helper processes each query start spawns (data source lookup and planning, the stream
    reader, the state schema check), paid that: measured here, a session start went from 18.0 to
    6.8 s, a query's first run from 14.1 to 6.9 s and later runs from 3.5 to 2.2 s. The directory
    links everything else of the pyspark package (bin, jars, conf). A SPARK_HOME that is a Spark
    distribution (set by the user, or on a cluster) is left alone: None."""
    package = Path(pyspark.__file__).resolve().parent
    configured = os.environ.get("SPARK_HOME")
    if configured and Path(configured).resolve() not in (package, (settings.home / "spark-home").resolve()):
        return None
    home = settings.home / "spark-home"
    if not (home / "jars").exists() or (home / "jars").resolve() != package / "jars":
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        for entry in package.iterdir():
            if entry.name not in ("python", "__pycache__"):
                (home / entry.name).symlink_to(entry)
        (home / "python" / "lib").mkdir(parents=True)  # no pyspark.zip, no py4j zip
    return home


def prepare_spark_environment(settings: Settings) -> None:
    """What the process environment must say before a JVM starts (here or in an orchestrator's
    session resource): the Python workers run this interpreter (else "Python worker failed to
    connect back"), and import pyspark from its installed package (`spark_home_without_zips`)."""
    for name, value in python_environment().items():
        os.environ.setdefault(name, value)
    home = spark_home_without_zips(settings)
    if home is not None:  # read when the JVM starts; a running one keeps its own
        os.environ["SPARK_HOME"] = str(home)


def get_spark(settings: Settings | None = None, app_name: str = "streamjoin") -> SparkSession:
    """Get or create the session (idempotent): local[2] by default, the settings' cluster master,
    or their Spark Connect server (which wins)."""
    settings = settings or Settings.from_env()
    prepare_spark_environment(settings)
    builder = SparkSession.builder.appName(app_name)
    if settings.spark_remote:
        spark = builder.remote(settings.spark_remote).getOrCreate()
        for key, value in CONF.items():  # Spark Connect sessions take these confs at runtime
            if key.startswith("spark.sql."):
                spark.conf.set(key, value)
    else:
        for key, value in session_conf(settings).items():
            builder = builder.config(key, value)
        spark = builder.master(settings.spark_master or "local[2]").getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
    return prepare_session(spark)
