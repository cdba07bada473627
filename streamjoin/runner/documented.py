"""Conformance cases that pin the ksqlDB documentation where ksqlDB itself behaves otherwise (its
own query-validation tests, ../shared/suites/ksqldb_qtt). The ksqlDB flavour follows ksqlDB; each
documented behaviour stays available as an option, and `load_cases` sets it on these cases, so
their expected output stays the documentation's, unchanged, wherever they run (run-cases,
check-cases, the tests)."""

from __future__ import annotations

_UNPROJECTED_KEY = ({"streamjoin.key_must_be_projected": "false"},
                    "the docs name a join key the projection leaves out; ksqlDB (0.15+) rejects the query")
_FK_TOMBSTONE = ({"streamjoin.fk_redundant_tombstones": "false"},
                 "the docs delete only existing foreign-key results; Kafka Streams also forwards a redundant tombstone")

# case id -> (the settings that select the documented behaviour, why ksqlDB differs)
DOCUMENTED: dict[str, tuple[dict[str, str], str]] = {
    "ksqldb.partitioning.ctas_key_name.inner_leftmost_is_left": _UNPROJECTED_KEY,
    "ksqldb.partitioning.ctas_key_name.inner_leftmost_is_right": _UNPROJECTED_KEY,
    "ksqldb.partitioning.ctas_key_name.left_join": _UNPROJECTED_KEY,
    "ksqldb.partitioning.ctas_key_name.full_outer": _UNPROJECTED_KEY,
    "ksqldb.table_table.fk.inner": _FK_TOMBSTONE,
}


def documented_settings(case_id: str) -> dict[str, str]:
    """The options that select the documented behaviour case `case_id` pins ({} for most cases)."""
    return DOCUMENTED.get(case_id, ({}, ""))[0]
