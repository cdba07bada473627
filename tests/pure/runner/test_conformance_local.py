"""Every accepted conformance case through the compiled runtime in-process (no Spark, no
broker): decode, operators, projection and encode exactly as a Spark task runs them. Fast
feedback for the compiler; the real-path verdict is tests/integration/test_conformance.py."""

from __future__ import annotations


import pytest

from streamjoin.runner.cases import load_cases
from streamjoin.runner.compare import compare
from streamjoin.runner.local import run_locally
from streamjoin.runner.planned import plan_case
from tests.paths import CONFORMANCE

ACCEPTED = [c for c in load_cases([CONFORMANCE]) if c.expect_error is None]


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda c: c.id)
def test_case_in_process(case):
    planned = plan_case(case, topic_prefix="local.")
    outputs = run_locally(case, planned)
    for topic, expected in planned.expected_by_topic(case.expected).items():
        reason = compare(expected, outputs[topic], case.compare == "ordered")
        assert reason is None, f"{case.id} ({topic}): {reason}"
