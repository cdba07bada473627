"""One test per validation rule: the statement is rejected with that rule, a message with the
doc's words, and the position of the offending text."""

from __future__ import annotations

import pytest

from streamjoin.plan.catalog import Catalog
from streamjoin.dialect import StreamJoinError, parse
from streamjoin.plan import plan_program
from tests.pure.plan.rejections import Rejected as Case, assert_rejected, source as _source


S = {"id": "STRING", "v": "STRING"}
CATALOG = Catalog.from_case_sources([
    _source("ls", "stream", ["id"], S), _source("rs", "stream", ["id"], S),
    _source("lt", "table", ["id"], {"id": "STRING", "fk": "STRING", "v": "INT"}),
    _source("rt", "table", ["id"], {"id": "STRING", "ref": "STRING", "v": "INT"}),
    _source("ints", "stream", ["uid"], {"uid": "INT", "url": "STRING"}, partitions=2),
    _source("longs", "stream", ["uid"], {"uid": "BIGINT", "url": "STRING"}, partitions=2),
    _source("bigs", "table", ["uid"], {"uid": "BIGINT", "name": "STRING"}, partitions=4),
    _source("vt", "versioned_table", ["pid"], {"pid": "STRING", "pname": "STRING", "t": "TIMESTAMP(3)"}, timestamp="t"),
    _source("probe", "stream", [], {"pid": "STRING", "t": "TIMESTAMP(3)"}, timestamp="t"),
])


CASES = {
    "stream-stream without WITHIN": Case("ksqldb", "SELECT * FROM ls l JOIN rs r ON l.id = r.id", "stream-stream-window", "WITHIN", "rs r"),
    "lenses stream-stream without window": Case("lenses", "SELECT STREAM l.v FROM ls l JOIN rs r ON l.id = r.id", "stream-stream-window", "window", "rs r"),
    "stream-table RIGHT": Case("ksqldb", "SELECT * FROM ls s RIGHT JOIN rt t ON s.id = t.id", "stream-table-join-type", "not supported", "rt t"),
    "stream-table FULL": Case("ksqldb", "SELECT * FROM ls s FULL OUTER JOIN rt t ON s.id = t.id", "stream-table-join-type", "not supported", "rt t"),
    "n-way FULL stage": Case("ksqldb", "SELECT * FROM ls a JOIN rs b WITHIN 10 SECONDS ON a.id = b.id FULL OUTER JOIN rt c ON a.id = c.id",
                             "stream-table-join-type", "not supported", "rt c"),
    "FK RIGHT": Case("ksqldb", "SELECT * FROM lt l RIGHT JOIN rt r ON l.fk = r.id", "foreign-key-join-type", "not supported", "rt r"),
    "N:M": Case("ksqldb", "SELECT * FROM lt l JOIN rt r ON l.fk = r.ref", "table-table-key", "key", "l.fk = r.ref"),
    "table-stream order": Case("ksqldb", "SELECT * FROM rt t JOIN ls s ON t.id = s.id", "join-operand-order", "invalid operands", "ls s"),
    "lenses table-stream INNER": Case("lenses", "WITH tv AS (SELECT TABLE * FROM rt); SELECT STREAM t.v FROM tv t JOIN ls s ON t.id = s.id", "join-operand-order", "RIGHT JOIN", "ls s"),
    "theta stream-table": Case("sqlstream", "SELECT STREAM * FROM ls e LEFT JOIN rt a ON (e.id > a.id)", "theta-join", "equi", "e.id > a.id"),
    "lenses both tables one side": Case("lenses", "SELECT STREAM s.v FROM ls s JOIN rt t ON concat(t.v, s.v) = 'x'", "lenses-on-expression", "side", "concat(t.v"),
    "lenses OR across tables": Case("lenses", "SELECT STREAM s.v FROM ls s JOIN rt t ON t.id = 'a' OR t.id = s.id", "lenses-on-expression", "AND", "t.id = 'a'"),
    "key type mismatch": Case("ksqldb", "SELECT * FROM ints c JOIN bigs u ON c.uid = u.uid", "key-type", "type", "c.uid = u.uid"),
    "table non-key column": Case("ksqldb", "SELECT * FROM ls s JOIN rt t ON s.v = t.ref", "table-non-key", "key", "s.v = t.ref"),
    "partition count": Case("ksqldb", "SELECT * FROM longs c JOIN bigs u ON c.uid = u.uid", "co-partitioning", "partitions", "bigs u"),
    "non-equi": Case("ksqldb", "SELECT * FROM ls l JOIN rs r WITHIN 15 SECONDS ON l.id > r.id", "equi-join", "equal", "l.id > r.id"),
    "multi-column": Case("ksqldb", "SELECT * FROM ls l JOIN rs r WITHIN 15 SECONDS ON l.id = r.id AND l.v = r.v", "multi-column-key", "multiple", "l.id = r.id"),
    "temporal pk": Case("flink", "SELECT * FROM probe AS o LEFT JOIN vt FOR SYSTEM_TIME AS OF o.t AS p ON o.pid = p.pname", "temporal-primary-key", "primary key", "o.pid = p.pname"),
    "unknown column": Case("ksqldb", "SELECT l.nope FROM ls l JOIN rs r WITHIN 1 SECOND ON l.id = r.id", "unknown-column", "nope", "l.nope"),
    "ambiguous column": Case("ksqldb", "SELECT v FROM ls l JOIN rs r WITHIN 1 SECOND ON l.id = r.id", "ambiguous-column", "ambiguous", "v"),
    "unknown relation": Case("ksqldb", "SELECT * FROM nowhere", "unknown-relation", "nowhere", "nowhere"),
    "duplicate output column": Case("flink", "SELECT * FROM ls l JOIN rs r ON l.id = r.id", "duplicate-column", "twice", "*"),
    "ctas over a stream": Case("ksqldb", "CREATE TABLE x AS SELECT * FROM ls l JOIN rt t ON l.id = t.id", "result-kind", "CREATE STREAM", "CREATE TABLE x"),
}


@pytest.mark.parametrize("name", CASES)
def test_rule_rejects_with_position(name):
    assert_rejected(CASES[name], CATALOG)


@pytest.mark.parametrize("sql, flavour", [
    ("SET 'streamjoin.allow_multi_column_keys'='true';\nSELECT l.v FROM ls l JOIN rs r WITHIN 15 SECONDS ON l.id = r.id AND l.v = r.v", "ksqldb"),
    ("SET 'streamjoin.allow_non_equi_predicates'='true';\nSELECT l.v FROM ls l JOIN rs r WITHIN 15 SECONDS ON l.id = r.id AND l.v > r.v", "ksqldb"),
    ("SELECT STREAM l.v FROM ls l JOIN rs r ON l.id = r.id AND l.v = r.v", "sqlstream"),
    ("SELECT l.v FROM ls l JOIN rs r ON l.id = r.id AND l.v > r.v", "flink"),
])
def test_beyond_ksqldb_multi_column_and_residual_accepted(sql, flavour):
    [query] = plan_program(sql, CATALOG, flavour).queries
    join = query.project.child
    assert join.left_keys and len(join.left_keys) == len(join.right_keys)


def test_syntax_error_position():
    sql = "SELECT *\nFROM ls l JOIN rs r WITHIN ON l.id = r.id"
    with pytest.raises(StreamJoinError) as caught:
        parse(sql, "ksqldb", file="bad.sql")
    error = caught.value
    assert (error.rule, error.file, error.line) == ("syntax", "bad.sql", 2)
    assert "bad.sql:2:" in str(error) and "^" in str(error)
