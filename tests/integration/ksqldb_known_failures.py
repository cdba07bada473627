"""Cases of ../shared/suites/ksqldb_qtt that streamjoin does not pass yet, each with why (one line).
tests/integration/test_ksqldb_suite.py reports them as xfail; any other failure fails.

None now: the ksqldb flavour follows ksqlDB's engine where its documentation differs (the
documented behaviour is one SET away, docs/semantics.md "Coming from ksqlDB")."""

KNOWN_FAILURES: dict[str, str] = {}
