"""Cases of ../shared/suites/ksqldb_qtt that streamjoin does not pass yet, each with why (one line).
tests/integration/test_ksqldb_suite.py reports them as xfail; any other failure fails."""

KNOWN_FAILURES: dict[str, str] = {
    "qtt.headers.json::Sources with header columns can be joined":
        "HEADER('k') / HEADERS columns are not supported: record headers do not reach the task runtime",
    "qtt.joins.json::stream stream left join with out of order and custom grace period::JSON":
        "late records: the ksqlDB docs (conformance late_record_discarded) discard them; Kafka Streams emits "
        "an unmatched late outer record at once",
    "qtt.joins.json::stream stream right join with out of order and custom grace period::JSON":
        "late records: the ksqlDB docs discard them; Kafka Streams still joins one while the other side's "
        "window store retains a match",
}
