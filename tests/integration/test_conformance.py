"""Every case of ../shared/conformance through the real path: records produced to the session
broker, the compiled query run by Spark (availableNow), the sink topic read back and compared.
The cases run three at a time on the one SparkSession; each case is reported as its own test."""

from __future__ import annotations


import pytest

from streamjoin.runner.cases import load_cases
from tests.integration.suites import check_case, run_through_the_real_path
from tests.paths import CONFORMANCE

CASES = [c for c in load_cases([CONFORMANCE])]


@pytest.fixture(scope="session")
def conformance_results(spark, kafka_bootstrap):
    return run_through_the_real_path(spark, kafka_bootstrap, CASES, "conformance")


def test_the_cases_are_all_there():
    assert len(CASES) == 106, f"expected the 106 cases of {CONFORMANCE}, found {len(CASES)}"


@pytest.mark.integration
@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_case_through_kafka_and_spark(conformance_results, case_id):
    check_case(conformance_results[case_id], {})


@pytest.mark.integration
def test_run_cases_command_prints_a_line_per_case_and_the_total(spark, kafka_bootstrap, capsys):
    from streamjoin.cli import main
    from streamjoin.kafka import admin

    before = set(admin.list_topics(kafka_bootstrap))
    status = main(["run-cases", str(CONFORMANCE / "ksqldb_joins.json"), "--only", "ksqldb.stream_table"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == ["PASS ksqldb.stream_table.inner", "PASS ksqldb.stream_table.left", "2 passed, 0 failed"]
    assert status == 0
    assert set(admin.list_topics(kafka_bootstrap)) - before == set()  # a passed case's topics are deleted
