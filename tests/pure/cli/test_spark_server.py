"""`streamjoin spark start|stop|status|url` where no server needs starting: a Spark the settings
name instead, or none running. (Starting one is the session's `spark_connect` fixture.)"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.cli import main


@dataclass(frozen=True)
class Case:
    env: dict[str, str]
    command: str
    status: int
    output: str


CASES = [
    Case({"STREAMJOIN_SPARK_REMOTE": "sc://spark.example:15002"}, "url", 0, "sc://spark.example:15002"),
    Case({"STREAMJOIN_SPARK_MASTER": "spark://spark.example:7077"}, "url", 1, ""),
    Case({}, "url", 1, ""),
    Case({}, "status", 1, "no spark connect server running"),
    Case({}, "stop", 0, "no spark connect server running"),
    Case({"STREAMJOIN_SPARK_REMOTE": "sc://spark.example:15002"}, "start", 0,
         "STREAMJOIN_SPARK_REMOTE is set (sc://spark.example:15002); the shared Spark Connect server is not used"),
    Case({"STREAMJOIN_SPARK_MASTER": "spark://spark.example:7077"}, "start", 0,
         "STREAMJOIN_SPARK_MASTER is set (spark://spark.example:7077); the shared Spark Connect server is not used"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.command}-{'-'.join(c.env) or 'nothing set'}")
def test_spark_command(case: Case, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STREAMJOIN_HOME", str(tmp_path))
    for name in ("STREAMJOIN_SPARK_REMOTE", "STREAMJOIN_SPARK_MASTER"):
        monkeypatch.delenv(name, raising=False)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    assert main(["spark", case.command]) == case.status
    assert capsys.readouterr().out.strip() == case.output
