"""What a run of registry-encoded values (serde.registry_runs, serde.registry_formats) takes
without asking a registry: which field each column reads, and which schemas keep the record path.
The runs themselves are checked against the serializers in tests/integration/test_registry_runs.py."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from confluent_kafka.schema_registry import Rule, RuleKind, RuleMode, RuleSet, Schema, SchemaReference

from streamjoin.dialect.types import parse_type
from streamjoin.serde.registry_codecs import Registry, RegistryCodec
from streamjoin.serde.registry_formats import FORMATS, resolved
from streamjoin.serde.registry_runs import SideRuns


@dataclass(frozen=True)
class Case:
    fields: list[str]
    columns: list[str]
    expected: list[str | None] | None


CASES = [
    Case(["A", "B"], ["A", "B"], ["A", "B"]),
    Case(["a", "b"], ["A", "B"], ["a", "b"]),  # another case: matched ignoring it
    Case(["a", "A"], ["A"], ["A"]),  # the same name first
    Case(["x", "X"], ["x1", "X"], [None, "X"]),  # a column without a field reads NULL
    Case(["b", "B"], ["b2", "B2", "b"], [None, None, "b"]),
    Case(["A", "a"], ["A", "Z"], ["A", None]),
    Case(["OTHER"], ["N"], None),  # one column, no field: the record path reads the one field
    Case(["p", "P"], ["Q", "p"], [None, "p"]),
    Case(["P", "p"], ["q"], None),
    Case(["Ab", "aB"], ["AB"], ["aB"]),  # several in other cases: the last one, as the record path reads
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.fields}->{c.columns}")
def test_each_column_reads_the_field_the_record_path_reads(case: Case):
    assert resolved(case.fields, case.columns) == case.expected


RULES = RuleSet(None, [Rule("r", None, RuleKind.CONDITION, RuleMode.WRITE, "CEL", None, None, "true", None, None,
                            None)])


@pytest.mark.parametrize("schema", [Schema('"long"', "AVRO", rule_set=RULES),
                                    Schema('"long"', "AVRO", [SchemaReference("Other", "other-value", 1)])],
                         ids=["rules", "references"])
def test_a_schema_with_rules_or_references_keeps_the_record_path(schema: Schema):
    codec = RegistryCodec("AVRO", [("N", parse_type("BIGINT"))], "value", False, "t",
                          Registry("http://nowhere.invalid"), (None, None, False))  # (asks nothing when made)
    runs = SideRuns(FORMATS["AVRO"], codec)
    made = []
    assert runs._plan(lambda s, r: made.append(s), schema) is None and not made
