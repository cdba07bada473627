"""Cases of ../shared/suites/ksqldb_qtt_formats that streamjoin does not pass yet, each with why
(one line). tests/integration/test_ksqldb_formats_suite.py reports them as xfail; any other
failure fails."""

KNOWN_FAILURES: dict[str, str] = {}
