"""ksqlDB's join tests in its other record formats (../shared/suites/ksqldb_qtt_formats: AVRO,
PROTOBUF, JSON_SR through the session's schema registry, PROTOBUF_NOSR, DELIMITED, KAFKA) through
the real path. A case listed in ksqldb_formats_known_failures.KNOWN_FAILURES may fail (xfail with
its reason); any other failing case fails its test."""

from __future__ import annotations

import pytest

from streamjoin.runner.cases import load_cases
from tests.integration.ksqldb_formats_known_failures import KNOWN_FAILURES
from tests.integration.suites import check_case, check_known_failures, run_through_the_real_path
from tests.paths import SUITES

CASES = load_cases([SUITES / "ksqldb_qtt_formats"])


@pytest.fixture(scope="session")
def formats_results(spark, kafka_bootstrap, schema_registry):
    return run_through_the_real_path(spark, kafka_bootstrap, CASES, "ksqldb_qtt_formats", schema_registry)


def test_known_failures_name_suite_cases_with_a_reason():
    check_known_failures(CASES, KNOWN_FAILURES)


@pytest.mark.integration
@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_ksqldb_formats_case_through_kafka_and_spark(formats_results, case_id):
    check_case(formats_results[case_id], KNOWN_FAILURES)
