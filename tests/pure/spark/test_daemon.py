"""The worker daemon's import path: jars that PySpark was not imported from are dropped."""

from __future__ import annotations

import sys

import pyspark

from streamjoin.spark import daemon


def test_the_daemon_drops_jars_pyspark_does_not_come_from(monkeypatch):
    jar = "/opt/spark/jars/spark-core_2.13.jar"
    kept = [entry for entry in sys.path if not entry.endswith(".jar")]
    monkeypatch.setattr(sys, "path", [*kept[:1], jar, *kept[1:]])
    monkeypatch.setitem(sys.path_importer_cache, jar, None)
    daemon.drop_unused_jars()
    assert sys.path == kept
    assert jar not in sys.path_importer_cache


def test_the_daemon_keeps_the_jar_pyspark_was_imported_from(monkeypatch):
    jar = pyspark.__file__.rsplit("/pyspark/", 1)[0]  # as if that folder were a jar holding pyspark
    monkeypatch.setattr(pyspark, "__file__", jar + ".jar/pyspark/__init__.py")
    monkeypatch.setattr(sys, "path", [jar + ".jar", "/elsewhere"])
    daemon.drop_unused_jars()
    assert sys.path == [jar + ".jar", "/elsewhere"]
