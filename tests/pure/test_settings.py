"""Settings read from the environment: a closed choice (the embedded broker's kind) in any case,
its default when unset, and a one-line error naming the variable and the choices otherwise."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.settings import BrokerKind, Settings


@dataclass
class Case:
    env: dict
    expected: BrokerKind


@pytest.mark.parametrize("case", [
    Case({}, BrokerKind.TANSU),
    Case({"STREAMJOIN_BROKER_KIND": ""}, BrokerKind.TANSU),
    Case({"STREAMJOIN_BROKER_KIND": "kafka"}, BrokerKind.KAFKA),
    Case({"STREAMJOIN_BROKER_KIND": " Tansu "}, BrokerKind.TANSU),
], ids=["unset", "empty", "kafka", "any-case"])
def test_the_broker_kind(case):
    assert Settings.from_env(case.env).broker_kind is case.expected


def test_an_unknown_broker_kind_names_the_variable_and_the_choices():
    with pytest.raises(ValueError, match=r"STREAMJOIN_BROKER_KIND='redpanda' is not one of: kafka, tansu"):
        Settings.from_env({"STREAMJOIN_BROKER_KIND": "redpanda"})
