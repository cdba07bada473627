"""The session's Spark settings: the JVM options a Settings names reach the driver's launch, and
nothing is added when it names none (a long-running query keeps the JVM's default JIT); Spark's
Kafka connector and delta-spark are on every session (their jars named, Delta's SQL on); a jar
pyspark ships is never added twice."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.settings import Settings
from streamjoin.spark import connectors
from streamjoin.spark.session import CONF, QUICK_START_JAVA_OPTIONS, session_conf

DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
JARS = ["/cache/spark-sql-kafka-0-10_2.13-4.2.0.jar", "/cache/delta-spark_2.13-4.4.0.jar"]


@pytest.fixture(autouse=True)
def cached_connectors(monkeypatch):
    """The connectors' jars as the cache would list them (no registry, no JVM here)."""
    monkeypatch.setattr(connectors, "jars", lambda: JARS)


@dataclass(frozen=True)
class Case:
    env: dict[str, str]
    expected_options: str | None


CASES = [
    Case({}, None),
    Case({"STREAMJOIN_SPARK_DRIVER_JAVA_OPTIONS": ""}, None),
    Case({"STREAMJOIN_SPARK_DRIVER_JAVA_OPTIONS": QUICK_START_JAVA_OPTIONS}, "-XX:TieredStopAtLevel=1"),
    Case({"STREAMJOIN_SPARK_DRIVER_JAVA_OPTIONS": "-Xss4m -XX:+UseG1GC"}, "-Xss4m -XX:+UseG1GC"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: repr(c.env))
def test_driver_java_options_from_the_environment(case: Case):
    settings = Settings.from_env(case.env)
    conf = session_conf(settings)
    assert conf.get(DRIVER_OPTIONS) == case.expected_options
    assert {k: v for k, v in conf.items() if k != DRIVER_OPTIONS} == {**CONF, **connectors.DELTA_SQL_CONF,
                                                                      "spark.jars": ",".join(JARS)}


SHIPPED = ["scala-library-2.13.16.jar", "spark-sql_2.13-4.2.0.jar", "zstd-jni-1.5.6-10.jar"]


@pytest.mark.parametrize("module, expected", [("scala-library", True), ("zstd-jni", True),
                                              ("spark-sql-kafka-0-10_2.13", False), ("spark-sql", False),
                                              ("kafka-clients", False)])
def test_a_jar_pyspark_ships_is_not_added_again(module, expected):
    assert connectors.shipped(module, SHIPPED) is expected


def test_session_conf_leaves_the_shared_conf_alone():
    session_conf(Settings(spark_driver_java_options="-Xss4m"))
    assert DRIVER_OPTIONS not in CONF
