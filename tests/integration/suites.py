"""Cases of a folder through the real path, once per test session (one CaseRunner on the session's
broker and SparkSession, three cases at a time, reading with Spark's own Kafka connector), and the
verdict of one case against a checked-in list of known failures: conformance, ksqlDB's and Flink's
suites share both."""

from __future__ import annotations

from dataclasses import replace

import pytest

from streamjoin.runner.cases import Case
from streamjoin.runner.run import CaseResult, CaseRunner
from streamjoin.settings import KafkaSource, Settings


def run_through_the_real_path(spark, kafka_bootstrap: str, cases: list[Case], label: str,
                              registry=None) -> dict[str, CaseResult]:
    """`registry`: the schema registry (serde.registry_codecs.Registry) of cases that need one.
    The queries read with Spark's own Kafka connector (issue 34: the suites on the Spark path);
    a case that flushes at the end of its input reads its last segment with streamjoin_kafka
    (`spark.sources`)."""
    settings = replace(Settings.from_env(), kafka_source=KafkaSource.SPARK)
    runner = CaseRunner(spark, kafka_bootstrap, settings)
    if registry is not None:
        from streamjoin.runner.registry_cases import CaseRegistry

        runner.case_registry = CaseRegistry(registry)
    try:
        results = {r.case_id: r for r in runner.run_all(cases, parallel=3)}
    finally:
        runner.close()
    failed = sum(r.status != "PASS" for r in results.values())
    print(f"\n{label} (real path): {len(results) - failed} passed, {failed} failed")
    return results


def check_case(result: CaseResult, known_failures: dict[str, str]) -> None:
    """PASS; or, for a listed case, xfail with its reason. A listed case that passes fails the
    test, so the list never goes stale."""
    known = known_failures.get(result.case_id)
    if known is not None:
        if result.status == "PASS":
            pytest.fail(f"{result.case_id} passes now: remove it from the known failures ({known})")
        pytest.xfail(f"{known} | {result.line()[:200]}")
    assert result.status == "PASS", result.line()


def check_known_failures(cases: list[Case], known_failures: dict[str, str]) -> None:
    """Every known failure names a case of the suite and gives a one-line reason."""
    ids = {c.id for c in cases}
    assert not set(known_failures) - ids, "known failures that are no longer suite cases"
    assert all(reason.strip() and "\n" not in reason for reason in known_failures.values())
