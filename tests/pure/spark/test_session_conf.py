"""The session's Spark settings: the JVM options a Settings names reach the driver's launch, and
nothing is added when it names none (a long-running query keeps the JVM's default JIT)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.settings import Settings
from streamjoin.spark.session import CONF, QUICK_START_JAVA_OPTIONS, session_conf

DRIVER_OPTIONS = "spark.driver.extraJavaOptions"


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
    assert {k: v for k, v in conf.items() if k != DRIVER_OPTIONS} == CONF


def test_session_conf_leaves_the_shared_conf_alone():
    session_conf(Settings(spark_driver_java_options="-Xss4m"))
    assert DRIVER_OPTIONS not in CONF
