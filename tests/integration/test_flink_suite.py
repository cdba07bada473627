"""Apache Flink's own SQL join integration tests (../shared/suites/flink_it, converted cases)
through the real path: records produced to the session broker, the compiled queries run by Spark,
the sink topic read back and compared. One run for the session; each case is its own test.

A case listed in KNOWN_FAILURES is expected to fail for the reason given: it is reported as
xfail with that reason when it fails, and as a failure when it passes (so the list stays true).
Every other case must pass."""

from __future__ import annotations

import pytest

from streamjoin.runner.cases import load_cases
from tests.integration.suites import check_case, run_through_the_real_path
from tests.paths import SUITES

FLINK_IT = SUITES / "flink_it"
CASES = load_cases([FLINK_IT])

# case id -> why it fails today (one line). Empty: every case of the suite passes.
KNOWN_FAILURES: dict[str, str] = {}


@pytest.fixture(scope="session")
def flink_suite_results(spark, kafka_bootstrap):
    return run_through_the_real_path(spark, kafka_bootstrap, CASES, "flink_it")


def test_the_suite_is_there_and_the_list_names_its_cases():
    assert len(CASES) == 47, f"expected the 47 cases of {FLINK_IT}, found {len(CASES)}"
    assert set(KNOWN_FAILURES) <= {c.id for c in CASES}
    assert all(reason.strip() and "\n" not in reason for reason in KNOWN_FAILURES.values())


@pytest.mark.integration
@pytest.mark.parametrize("case_id", [c.id for c in CASES])
def test_flink_case_through_kafka_and_spark(flink_suite_results, case_id):
    check_case(flink_suite_results[case_id], KNOWN_FAILURES)
