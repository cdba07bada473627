"""ASOF JOIN through the real path: the trades and quotes of tests/pure/test_asof_sql_run.py
produced to the session broker, the query run once by Spark (availableNow, end of input), the
output topic read back and compared with the hand-worked result (LEFT, >=, a late quote that
still serves a trade, a late trade dropped, a symbol without quotes)."""

from __future__ import annotations

import pytest

from streamjoin.settings import Settings
from streamjoin.runner.run import CaseRunner
from tests.pure.runtime.test_asof_sql_run import asof_case


@pytest.mark.integration
def test_asof_left_join_through_kafka_and_spark(spark, kafka_bootstrap):
    runner = CaseRunner(spark, kafka_bootstrap, Settings.from_env())
    try:
        result = runner.run(asof_case("ge_left"))
    finally:
        runner.close()
    assert result.status == "PASS", result.line()
