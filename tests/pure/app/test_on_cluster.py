"""A Flink table's `'properties.bootstrap.servers'` is the cluster its query runs on: the engine
hands a query whose tables name another cluster to an engine on that cluster (sharing its Spark),
and keeps a query that names none, or its own, on the project's. No broker is asked."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamjoin.app.engine import Engine
from streamjoin.app.project import load_project
from streamjoin.settings import Settings

PROJECT = "project-kafka:9092"
CASES = {  # the table's option -> the servers its query runs on
    "the Flink document's localhost:9092": ("'properties.bootstrap.servers' = 'localhost:9092', ", "localhost:9092"),
    "the project's own servers": (f"'properties.bootstrap.servers' = '{PROJECT}', ", PROJECT),
    "no option": ("", PROJECT),
    "a list, spaces dropped": ("'properties.bootstrap.servers' = 'a:9092, b:9092', ", "a:9092,b:9092"),
}


@pytest.mark.parametrize("name", CASES)
def test_the_cluster_a_query_runs_on(name, tmp_path: Path):
    option, servers = CASES[name]
    (tmp_path / "flink").mkdir()
    (tmp_path / "flink" / "sources.sql").write_text(
        f"CREATE TABLE products (id STRING, price INT) WITH ('connector' = 'kafka', 'topic' = 'products', {option}"
        "'value.format' = 'json');\n")
    (tmp_path / "flink" / "prices.sql").write_text("SELECT id, price FROM products;\n")
    query = load_project(tmp_path).query("prices")
    spark = object()
    engine = Engine(Settings(kafka_bootstrap=PROJECT, home=tmp_path), spark)
    chosen = engine.on_cluster(query)
    assert chosen.bootstrap == servers
    assert (chosen is engine) == (servers == PROJECT)
    assert chosen.spark is spark
