"""run-cases starts its Spark driver at the quick JIT tier unless the environment names JVM
options: a case run is many small queries, then the end."""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import pytest

from streamjoin.cli import run_cases
from streamjoin.spark import session


class Started(Exception):
    """Stops the run once it asked for its session."""


@dataclass(frozen=True)
class Case:
    env_options: str | None
    expected: str


CASES = [
    Case(None, session.QUICK_START_JAVA_OPTIONS),
    Case("", session.QUICK_START_JAVA_OPTIONS),
    Case("-Xss4m", "-Xss4m"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: repr(c.env_options))
def test_the_case_run_session_takes_the_quick_tier_unless_told(case, monkeypatch, tmp_path):
    if case.env_options is None:
        monkeypatch.delenv("STREAMJOIN_SPARK_DRIVER_JAVA_OPTIONS", raising=False)
    else:
        monkeypatch.setenv("STREAMJOIN_SPARK_DRIVER_JAVA_OPTIONS", case.env_options)
    asked = []

    def get_spark(settings, app_name):
        asked.append(settings.spark_driver_java_options)
        raise Started

    monkeypatch.setattr(session, "get_spark", get_spark)
    args = argparse.Namespace(paths=[str(tmp_path)], only=[], parallel=1, local=False)
    with pytest.raises(Started):
        run_cases.run(args)
    assert asked == [case.expected]
