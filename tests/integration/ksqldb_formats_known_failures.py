"""Cases of ../shared/suites/ksqldb_qtt_formats that streamjoin does not pass yet, each with why
(one line). tests/integration/test_ksqldb_formats_suite.py reports them as xfail; any other
failure fails."""

# A keyed table-table join emits a changed row without the row it replaces, so an aggregate over it
# adds the new row and never takes the old one out (ksqlDB's aggregate undoes the old row first).
_REPLACED_ROW = "SUM over a table-table join's updates counts the replaced row too (205 where ksqlDB has 105; 25 for 20)"

KNOWN_FAILURES: dict[str, str] = {
    "qtt.table-table-join.json::table-table key join with protobuf schema and schema id":
        "the two tables' keys are in different registry schemas (ids 101, 201), so one key's bytes differ and its "
        "rows land in different partitions of 128: co-partitioning compares key formats, not schemas",
    "qtt.joins.json::matching time-windowed - SR-enabled key format":
        "a HOPPING-windowed key and a TUMBLING-windowed key are refused as a join pair; ksqlDB joins them",
    "qtt.group-by.json::on join": _REPLACED_ROW,
    "qtt.sum.json::sum int left join of table": _REPLACED_ROW,
}
