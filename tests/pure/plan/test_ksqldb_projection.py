"""ksqlDB's projection rules, one case per rule: how a join's columns are named, which projected
column becomes the key (viable key columns, the synthetic ROWKEY, a foreign-key join's left key),
the pseudo-columns, and the statements ksqlDB rejects for them (naming the identifiers)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.dialect import StreamJoinError
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog
from streamjoin.runner.cases import ExpectError

SETUP = """
CREATE STREAM L (A INT KEY, B INT, C INT) WITH (kafka_topic='l');
CREATE STREAM R (A INT KEY, B INT, D INT) WITH (kafka_topic='r');
CREATE TABLE T (A INT PRIMARY KEY, E INT) WITH (kafka_topic='t');
CREATE TABLE U (A INT PRIMARY KEY, F INT) WITH (kafka_topic='u');
CREATE TABLE LT (ID1 INT PRIMARY KEY, ID2 INT PRIMARY KEY, FK INT) WITH (kafka_topic='lt', format='JSON');
CREATE TABLE RT (ID INT PRIMARY KEY, X INT) WITH (kafka_topic='rt', format='JSON');
CREATE STREAM K1 (ROWKEY INT KEY, ROWKEY_1 INT) WITH (kafka_topic='k1');
CREATE STREAM K2 (ROWKEY_2 INT KEY, Y INT) WITH (kafka_topic='k2');
CREATE STREAM S (A INT KEY, V STRUCT<f INT, `g h` STRING>) WITH (kafka_topic='s');
"""
CATALOG = plan_program(SETUP, Catalog(), "ksqldb").catalog
WITHIN = "WITHIN 10 SECONDS"


@dataclass
class Named:
    sql: str
    key: list[str]
    value: list[str]


NAMING = {
    # a qualified or unqualified column keeps its name unless another input has it: <ALIAS>_<COLUMN>
    "shared names are qualified": Named(f"SELECT L.A, L.B, R.B, C, D FROM L JOIN R {WITHIN} ON L.A = R.A",
                                        ["L_A"], ["L_B", "R_B", "C", "D"]),
    "pseudo-columns are in every input": Named("SELECT L.A, L.ROWTIME, T.ROWTIME FROM L JOIN T ON L.A = T.A",
                                               ["L_A"], ["L_ROWTIME", "T_ROWTIME"]),
    "one input: plain names": Named("CREATE STREAM O AS SELECT A, B, ROWTIME AS TS FROM L;", ["A"], ["B", "TS"]),
    # the first viable key column the projection holds is the key; the others stay values
    "left join column is preferred": Named(f"SELECT * FROM L JOIN R {WITHIN} ON L.A = R.A", ["L_A"],
                                           ["L_B", "L_C", "R_A", "R_B", "R_D"]),
    "right join column when the left is not projected": Named(f"SELECT L.B, R.* FROM L JOIN R {WITHIN} ON L.A = R.A",
                                                              ["R_A"], ["L_B", "R_B", "R_D"]),
    "an expression side is not viable": Named(f"SELECT L.*, R.A FROM L LEFT JOIN R {WITHIN} ON ABS(L.A) = R.A",
                                              ["R_A"], ["L_A", "L_B", "L_C"]),
    "an earlier join's key column stays viable": Named("SELECT T.A, L.B FROM L JOIN T ON L.A = T.A JOIN U ON L.A = U.A",
                                                       ["T_A"], ["B"]),
    # FULL OUTER and expression joins: the synthetic key, first in SELECT *, aliasable
    "synthetic key in SELECT *": Named(f"SELECT * FROM L FULL OUTER JOIN R {WITHIN} ON L.A = R.A", ["ROWKEY"],
                                       ["L_A", "L_B", "L_C", "R_A", "R_B", "R_D"]),
    "synthetic key aliased": Named(f"SELECT ROWKEY AS K, L.B FROM L JOIN R {WITHIN} ON ABS(L.A) = ABS(R.A)", ["K"], ["L_B"]),
    "synthetic key avoids ROWKEY columns": Named(f"SELECT ROWKEY_3, K1.ROWKEY FROM K1 FULL OUTER JOIN K2 {WITHIN} "
                                                 "ON K1.ROWKEY = K2.ROWKEY_2", ["ROWKEY_3"], ["ROWKEY"]),
    # a foreign-key join is keyed by the left table's primary key: every column of it
    "foreign key: the left primary key": Named("SELECT ID1, ID2, X FROM LT JOIN RT ON FK = ID", ["ID1", "ID2"], ["X"]),
    # PARTITION BY after a join: SELECT * also lists each input's pseudo-columns
    "partitioned join star": Named("SELECT * FROM L JOIN T ON L.A = T.A PARTITION BY L.B", ["L_B"],
                                   ["L_ROWTIME", "L_ROWPARTITION", "L_ROWOFFSET", "L_A", "L_C", "T_ROWTIME",
                                    "T_ROWPARTITION", "T_ROWOFFSET", "T_A", "T_E"]),
    # a struct field is named after the field; struct->* gives one column per field
    "struct fields": Named(f"SELECT S.A, S.V->F AS F2, S.V->* FROM S JOIN L {WITHIN} ON S.A = L.A", ["S_A"],
                           ["F2", "F", "g h"]),
    # unnamed expressions are numbered among themselves
    "KSQL_COL_n counts unnamed expressions": Named("CREATE STREAM O AS SELECT A, B + 1, C * 2 FROM L;", ["A"],
                                                   ["KSQL_COL_0", "KSQL_COL_1"]),
}


@pytest.mark.parametrize("name", NAMING)
def test_naming_and_key(name):
    case = NAMING[name]
    sql = case.sql if case.sql.startswith("CREATE") else f"CREATE STREAM OUT AS {case.sql};"
    sql = sql.replace("CREATE STREAM OUT AS SELECT ID1", "CREATE TABLE OUT AS SELECT ID1")
    [query] = plan_program(sql, CATALOG, "ksqldb").queries
    assert (list(query.key_columns), list(query.value_columns)) == (case.key, case.value)


@dataclass
class Rejected:
    sql: str
    rule: str
    names: tuple[str, ...]  # identifiers the message must name


REJECTED = {
    # ksqlDB's own key rule, the default (its documentation's examples leave the key out: SET ... 'false')
    "join key not projected": Rejected(f"CREATE STREAM OUT AS SELECT L.B, R.D FROM L JOIN R {WITHIN} ON L.A = R.A;",
                                       "key-not-projected", ("OUT", "L.A", "R.A")),
    "synthetic key not projected": Rejected(f"SET 'streamjoin.key_must_be_projected'='true';\nCREATE STREAM OUT AS SELECT L.*, R.* FROM L JOIN R {WITHIN} "
                                            "ON ABS(L.A) = ABS(R.A);", "key-not-projected", ("OUT", "ROWKEY")),
    "foreign-key join without the left key": Rejected("SET 'streamjoin.key_must_be_projected'='true';\nCREATE TABLE OUT AS SELECT FK, X FROM LT JOIN RT ON FK = ID;",
                                                      "key-not-projected", ("OUT", "LT", "ID1", "ID2")),
    "key projected twice": Rejected(f"CREATE STREAM OUT AS SELECT L.A, L.A AS K2, R.D FROM L JOIN R {WITHIN} "
                                    "ON L.A = R.A;", "key-projected-twice", ("L_A", "K2")),
    "reserved name": Rejected(f"CREATE STREAM OUT AS SELECT L.A, L.ROWTIME AS ROWTIME FROM L JOIN R {WITHIN} "
                              "ON L.A = R.A;", "reserved-column-name", ("ROWTIME",)),
    "comparison of a number with a string": Rejected("CREATE TABLE OUT AS SELECT L.B, COUNT(*) FROM L GROUP BY L.B "
                                                     "HAVING SUM(L.C) > '100';", "comparison-types", ("SUM", "100")),
    "foreign-key join after a join": Rejected("CREATE TABLE OUT AS SELECT T.A, X FROM T JOIN U ON T.A = U.A "
                                              "JOIN RT ON T.E = RT.ID;", "foreign-key-join-input", ("T", "E", "RT", "ID")),
    "table joined to a stream": Rejected("CREATE STREAM OUT AS SELECT T.A, L.B FROM T JOIN L ON T.A = L.A;",
                                         "join-operand-order", ("T", "L")),
    "right table not joined on its key": Rejected("CREATE TABLE OUT AS SELECT T.A, F FROM T JOIN U ON T.A = U.F;",
                                                  "table-table-key", ("T", "A", "U", "F")),
    # an unknown qualifier names the relations it could be; an unsupported join type its sides
    "unknown qualifier in ON": Rejected("CREATE STREAM OUT AS SELECT L.A, E FROM L JOIN T ON X.A = T.A;",
                                        "unknown-relation", ("X", "L", "T")),
    "unknown qualifier in SELECT": Rejected("CREATE STREAM OUT AS SELECT Q.A, E FROM L JOIN T ON L.A = T.A;",
                                            "unknown-relation", ("Q", "L", "T")),
    "unknown qualifier of a star": Rejected("CREATE STREAM OUT AS SELECT Q.* FROM L JOIN T ON L.A = T.A;",
                                            "unknown-relation", ("Q", "L", "T")),
    "FULL OUTER stream-table": Rejected("CREATE STREAM OUT AS SELECT L.A, E FROM L FULL OUTER JOIN T ON L.A = T.A;",
                                        "stream-table-join-type", ("L", "T", "L.A", "T.A")),
    "RIGHT foreign-key join": Rejected("CREATE TABLE OUT AS SELECT ID1, ID2, X FROM LT RIGHT JOIN RT ON FK = ID;",
                                       "foreign-key-join-type", ("LT", "RT", "FK", "ID")),
    "a literal is not a join expression": Rejected(f"CREATE STREAM OUT AS SELECT * FROM L JOIN R {WITHIN} ON L.A = 0;",
                                                   "equi-join", ("R", "L", "A")),
}


@pytest.mark.parametrize("name", REJECTED)
def test_rejected_naming_the_identifiers(name):
    case = REJECTED[name]
    with pytest.raises(StreamJoinError) as caught:
        plan_program(case.sql, CATALOG, "ksqldb")
    error = caught.value
    assert error.rule == case.rule, str(error)
    assert ExpectError(case.names, match="names").missing(error) == [], error.reason


def test_a_join_key_left_out_of_the_projection_is_named_as_documented():
    """ksqlDB's documentation writes such queries; ksqlDB 0.15+ (the default) rejects them unless
    the key is projected (tested above)."""
    sql = ("SET 'streamjoin.key_must_be_projected'='false';\n"
           "CREATE STREAM OUT AS SELECT L.B, R.D FROM L JOIN R WITHIN 1 SECOND ON L.A = R.A;")
    [query] = plan_program(sql, CATALOG, "ksqldb").queries
    assert list(query.key_columns) == ["A"]  # the left-most column of the join criteria


def test_a_join_key_left_out_of_the_projection_is_rejected_by_default():
    with pytest.raises(StreamJoinError) as caught:
        plan_program("CREATE STREAM OUT AS SELECT L.B, R.D FROM L JOIN R WITHIN 1 SECOND ON L.A = R.A;",
                     CATALOG, "ksqldb")
    assert caught.value.rule == "key-not-projected"


def test_transient_queries_need_no_key_in_the_projection():
    [query] = plan_program(f"SELECT L.B FROM L JOIN R {WITHIN} ON L.A = R.A;", CATALOG, "ksqldb").queries
    assert list(query.key_columns) == ["A"]


def test_other_flavours_keep_plain_names():
    [query] = plan_program("SELECT l.B, r.B AS RB, l.ROWTIME AS T FROM L l JOIN R r ON l.A = r.A", CATALOG, "flink").queries
    assert list(query.value_columns) == ["B", "RB", "T"]


WINDOWED = """
CREATE STREAM W1 (ID INT KEY, V INT) WITH (kafka_topic='w1', window_type='SESSION');
CREATE STREAM W2 (ID INT KEY, V INT) WITH (kafka_topic='w2', window_type='SESSION');
CREATE STREAM W3 (ID INT KEY, V INT) WITH (kafka_topic='w3', window_type='TUMBLING', window_size='1 SECOND');
"""


@pytest.mark.parametrize("sql, rule, names", [
    ("SELECT W1.ID, W1.V FROM W1 JOIN L WITHIN 1 SECOND ON W1.ID = L.A", "windowed-key", ("W1", "L")),
    ("SELECT W1.ID, W1.V FROM W1 JOIN W3 WITHIN 1 SECOND ON W1.ID = W3.ID", "windowed-key", ("W1", "W3")),
    ("SELECT W1.V, W2.V FROM W1 JOIN W2 WITHIN 1 SECOND ON W1.V = W2.V", "windowed-repartition", ("W1", "V")),
    ("SELECT W1.ID, W1.WINDOWSTART AS WINDOWSTART FROM W1", "reserved-column-name", ("WINDOWSTART",)),
    ("SELECT L.A, L.WINDOWSTART AS WS FROM L", "unknown-column", ("WINDOWSTART",)),
])
def test_windowed_key_rules(sql, rule, names):
    catalog = plan_program(WINDOWED, CATALOG, "ksqldb").catalog
    with pytest.raises(StreamJoinError) as caught:
        plan_program(f"CREATE STREAM OUT AS {sql};", catalog, "ksqldb")
    assert caught.value.rule == rule and ExpectError(names, match="names").missing(caught.value) == []


def test_windowed_join_keys_include_the_window():
    catalog = plan_program(WINDOWED, CATALOG, "ksqldb").catalog
    [query] = plan_program("CREATE STREAM OUT AS SELECT W1.ID, W1.V, W1.WINDOWEND AS E FROM W1 JOIN W2 WITHIN 1 SECOND "
                           "ON W1.ID = W2.ID;", catalog, "ksqldb").queries
    join = query.project.child
    assert [k.sql() for k in join.right_keys] == ["W2.ID", "W2.WINDOWSTART", "W2.WINDOWEND"]
    assert (list(query.key_columns), list(query.value_columns)) == (["W1_ID"], ["W1_V", "E"])
    assert query.sink.window is not None and query.sink.window.kind == "SESSION"
