"""The Dagster `spark` resource's config carries the engine's session settings, JVM options included."""

from __future__ import annotations

from resources import spark_config
from streamjoin.settings import Settings
from streamjoin.spark.session import CONF


def test_spark_config_takes_the_driver_java_options():
    config = spark_config(Settings(spark_driver_java_options="-XX:TieredStopAtLevel=1"))
    assert config["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=1"
    assert {k: v for k, v in config.items() if k in CONF} == CONF
    assert config["spark.master"] == "local[2]"


def test_spark_config_without_options_leaves_the_jvm_default():
    assert "spark.driver.extraJavaOptions" not in spark_config(Settings())
