"""Spark's own Kafka connector (`format("kafka")`) and delta-spark (`format("delta")`, `DeltaTable`
MERGE) on every session the engine starts: their jars from Maven Central (`streamjoin.maven`, into
the project's jar cache on first use), at the versions of the installed pyspark and delta-spark
Python packages, so the JVM and Python halves always match.

Jars the pyspark package already ships (Scala's library, Hadoop's client, SLF4J, ...) are not
added again, whatever version the connectors' poms name: Spark's own copies win.
"""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pyspark

from streamjoin import maven

DELTA_SQL_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def artifacts() -> tuple[maven.Artifact, ...]:
    return (maven.Artifact("org.apache.spark", "spark-sql-kafka-0-10_2.13", pyspark.__version__),
            maven.Artifact("io.delta", "delta-spark_2.13", version("delta-spark")))


def shipped(module: str, shipped_jars: list[str]) -> bool:
    """Whether pyspark ships a jar of `module` (its files are `<module>-<version>.jar`)."""
    return any(re.match(re.escape(module) + r"-\d", name) for name in shipped_jars)


def jars() -> list[Path]:
    """The connectors' jars a session adds to pyspark's own (fetched on first use). A resolved
    jar's module is its folder in Ivy's cache: `<cache>/<organisation>/<module>/jars/<file>`."""
    own = [jar.name for jar in (Path(pyspark.__file__).parent / "jars").glob("*.jar")]
    found = [jar for artifact in artifacts() for jar in maven.resolve(artifact)]
    return list(dict.fromkeys(jar for jar in found if not shipped(jar.parent.parent.name, own)))


def conf() -> dict[str, str]:
    """Session settings that put both connectors on the session and turn on Delta's SQL."""
    return {"spark.jars": ",".join(str(jar) for jar in jars()), **DELTA_SQL_CONF}
