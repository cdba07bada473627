"""ksqlDB's own join tests (../shared/suites/ksqldb_qtt) through the real path: records produced to
the session broker, every compiled query run by Spark, the sink topics read back and compared.
A case listed in ksqldb_known_failures.KNOWN_FAILURES may fail (reported as xfail with its
reason); any other failing case fails its test, so nothing that passes regresses."""

from __future__ import annotations

import pytest

from streamjoin.runner.cases import load_cases
from tests.integration.suites import check_case, check_known_failures, run_through_the_real_path
from tests.integration.ksqldb_known_failures import KNOWN_FAILURES
from tests.paths import SUITES

CASES = load_cases([SUITES / "ksqldb_qtt"])


@pytest.fixture(scope="session")
def suite_results(spark, kafka_bootstrap):
    return run_through_the_real_path(spark, kafka_bootstrap, CASES, "ksqldb_qtt")


def test_known_failures_name_suite_cases_with_a_reason():
    check_known_failures(CASES, KNOWN_FAILURES)


@pytest.mark.integration
@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_ksqldb_case_through_kafka_and_spark(suite_results, case_id):
    check_case(suite_results[case_id], KNOWN_FAILURES)
