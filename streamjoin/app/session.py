"""The Spark session an orchestrator builds for the engine: its configuration, and the session
made ready once it exists. pyspark is imported only when these are called (a sensor tick or a
lag check never needs it)."""

from __future__ import annotations

from streamjoin.settings import Settings

PYTHON_CONF = ("spark.pyspark.python", "spark.pyspark.driver.python")


def spark_config(settings: Settings, app_name: str = "streamjoin") -> dict:
    """The engine's Spark settings as a session builder's configuration: `CONF` (RocksDB state
    store, 2 shuffle partitions, UTC, Arrow, ...) with the settings' driver JVM options, the
    master (`Settings.spark_master`, else `local[2]`), the app name, and this interpreter for
    Python workers (the venv where streamjoin is installed)."""
    from streamjoin.spark.session import python_environment, session_conf

    python = python_environment()["PYSPARK_PYTHON"]
    return {**session_conf(settings), "spark.master": settings.spark_master or "local[2]",
            "spark.app.name": app_name, "spark.log.level": "WARN",
            **{key: python for key in PYTHON_CONF}}


def ready_session(settings: Settings, session_of):
    """The session `session_of()` starts, made ready for the engine. The process is prepared
    before the (lazy) session starts its JVM: Python workers run this interpreter and import
    pyspark from the installed package; then the data sources are registered."""
    from streamjoin.spark.session import prepare_session, prepare_spark_environment

    prepare_spark_environment(settings)
    return prepare_session(session_of())
