"""The one way the engine gets a SparkSession: local by default, a cluster master with
STREAMJOIN_SPARK_MASTER, Spark Connect with STREAMJOIN_SPARK_REMOTE; always with our Python data
sources registered and the settings our operators need."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from streamjoin.kafka.datasource import KafkaDataSource

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


def get_spark(app_name: str = "streamjoin", master: str | None = None) -> SparkSession:
    """Get or create the session (idempotent) and register the streamjoin data sources."""
    # Workers must run this interpreter (the venv where streamjoin is installed); otherwise
    # they fail with "Python worker failed to connect back".
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    remote = None if master else os.environ.get("STREAMJOIN_SPARK_REMOTE")
    if remote:
        spark = builder.remote(remote).getOrCreate()
        for key, value in CONF.items():  # Spark Connect sessions take these confs at runtime
            if key.startswith("spark.sql."):
                spark.conf.set(key, value)
    else:
        master = master or os.environ.get("STREAMJOIN_SPARK_MASTER") or "local[2]"
        for key, value in CONF.items():
            builder = builder.config(key, value)
        spark = builder.master(master).getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
    spark.dataSource.register(KafkaDataSource)
    return spark
