"""The engine's SparkSession: local by default, a cluster master or a Spark Connect server from
`Settings`; always with our Python data sources registered and the settings our operators need
(`CONF`, which an orchestrator building its own session passes too)."""

from __future__ import annotations

import itertools
import os
import sys

from pyspark.sql import SparkSession

from streamjoin.settings import Settings
from streamjoin.spark.kafka_datasource import KafkaDataSource

CONF = {
    # transformWithStateInPandas needs RocksDB (the HDFS provider is unsupported for it).
    "spark.sql.streaming.stateStore.providerClass":
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
    # The default 200 shuffle partitions made a local stream-stream join ~20x slower.
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    # Python workers start slowly on a loaded 2-core machine; the 15 s default failed queries
    # with "Python worker failed to connect back".
    "spark.python.authenticate.socketTimeout": "120s",
}


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


def get_spark(settings: Settings | None = None, app_name: str = "streamjoin") -> SparkSession:
    """Get or create the session (idempotent): local[2] by default, the settings' cluster master,
    or their Spark Connect server (which wins)."""
    settings = settings or Settings.from_env()
    for name, value in python_environment().items():
        os.environ.setdefault(name, value)
    builder = SparkSession.builder.appName(app_name)
    if settings.spark_remote:
        spark = builder.remote(settings.spark_remote).getOrCreate()
        for key, value in CONF.items():  # Spark Connect sessions take these confs at runtime
            if key.startswith("spark.sql."):
                spark.conf.set(key, value)
    else:
        for key, value in CONF.items():
            builder = builder.config(key, value)
        spark = builder.master(settings.spark_master or "local[2]").getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
    return prepare_session(spark)
