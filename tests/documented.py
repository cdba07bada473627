"""Conformance cases that pin the ksqlDB documentation where ksqlDB itself behaves otherwise (its
own query-validation tests, ../shared/suites/ksqldb_qtt). The ksqlDB flavour follows ksqlDB; each
documented behaviour stays available as an option, and these cases are checked with it set:
their expected output is the documentation's, unchanged."""

from __future__ import annotations

from dataclasses import replace

from streamjoin.runner.cases import Case

_UNPROJECTED_KEY = ({"streamjoin.key_must_be_projected": "false"},
                    "the docs name a join key the projection leaves out; ksqlDB (0.15+) rejects the query")
_FK_TOMBSTONE = ({"streamjoin.fk_redundant_tombstones": "false"},
                 "the docs delete only existing foreign-key results; Kafka Streams also forwards a redundant tombstone")

DOCUMENTED: dict[str, tuple[dict, str]] = {
    "ksqldb.partitioning.ctas_key_name.inner_leftmost_is_left": _UNPROJECTED_KEY,
    "ksqldb.partitioning.ctas_key_name.inner_leftmost_is_right": _UNPROJECTED_KEY,
    "ksqldb.partitioning.ctas_key_name.left_join": _UNPROJECTED_KEY,
    "ksqldb.partitioning.ctas_key_name.full_outer": _UNPROJECTED_KEY,
    "ksqldb.table_table.fk.inner": _FK_TOMBSTONE,
}


def as_documented(case: Case) -> Case:
    """`case` with the option that selects the documented behaviour it pins, if any."""
    options, _ = DOCUMENTED.get(case.id, ({}, ""))
    return replace(case, settings={**case.settings, **options}) if options else case
