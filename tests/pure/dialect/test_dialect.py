"""Parser tests, one per clause: each statement parses to the expected node and prints back to
SQL that parses to the same tree (round trip)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from sqlglot import exp

from streamjoin.dialect import (
    CreateRelation, SetOption, SourceTable, StreamJoin, StreamJoinError, StreamQuery, ViewDefinition,
    WindowTableFunction, declared_flavour, dialect_for, parse,
)
from streamjoin.dialect.nodes import StoreFormats


@dataclass
class Case:
    flavour: str
    sql: str
    node: type  # the class of the statement, or of a node that must occur in it
    check: callable = lambda tree: True


CASES = {
    "ksqldb create stream": Case("ksqldb", "CREATE STREAM clicks (userId INT KEY, url STRING) WITH "
                                 "(kafka_topic='clickstream', value_format='json', partitions=2)", CreateRelation,
                                 lambda t: t.args["columns"][0].args["key"] == "KEY"),
    "ksqldb create table primary key": Case("ksqldb", "CREATE TABLE users (id BIGINT PRIMARY KEY, fullName STRING) "
                                            "WITH (kafka_topic='users')", CreateRelation,
                                            lambda t: t.args["columns"][0].args["key"] == "PRIMARY KEY"),
    "flink create table": Case("flink", "CREATE TABLE p (id STRING, ts TIMESTAMP(3) METADATA FROM 'value.source.timestamp' "
                               "VIRTUAL, price DECIMAL(10, 4), PRIMARY KEY(id) NOT ENFORCED, WATERMARK FOR ts AS ts "
                               "- INTERVAL '5' SECOND) WITH ('connector' = 'kafka', 'topic' = 'products')",
                               CreateRelation, lambda t: t.args["primary_key"][0].name == "id"),
    "sqlstream create stream": Case("sqlstream", "CREATE STREAM beast_events (row_id integer not null, zone integer)",
                                    CreateRelation),
    "csas with emit": Case("ksqldb", "CREATE STREAM x WITH (PARTITIONS=6) AS SELECT * FROM a JOIN b WITHIN 10 SECONDS "
                           "ON a.id = b.id EMIT CHANGES", CreateRelation,
                           lambda t: isinstance(t.expression, StreamQuery) and t.expression.args["emit"].name == "CHANGES"),
    "partition by": Case("ksqldb", "SELECT * FROM products PARTITION BY product_id", StreamQuery),
    "within grace": Case("ksqldb", "SELECT * FROM l JOIN r WITHIN 15 SECONDS GRACE PERIOD 5 SECONDS ON l.id = r.id",
                         SourceTable, lambda t: t.find(SourceTable).args["within"].args["grace"].millis == 5000),
    "within before after": Case("ksqldb", "SELECT * FROM l JOIN r WITHIN (1 HOUR, 2 HOURS) ON l.id = r.id", SourceTable,
                                lambda t: t.find(SourceTable).args["within"].args["after"].millis == 7_200_000),
    "lenses within after on": Case("lenses", "SELECT STREAM a.x FROM a LEFT JOIN b ON a.id = b.id WITHIN 5s", SourceTable,
                                   lambda t: t.find(SourceTable).args["within"].args["before"].millis == 5000),
    "select stream modifier": Case("lenses", "SELECT STREAM * FROM a", exp.Select,
                                   lambda t: t.args["operation_modifiers"][0].name == "STREAM"),
    "select table modifier": Case("lenses", "SELECT TABLE * FROM customers JOIN orders", exp.Select,
                                  lambda t: t.args["operation_modifiers"][0].name == "TABLE"),
    "lenses view": Case("lenses", "WITH t AS (SELECT TABLE * FROM customers)", ViewDefinition),
    "lenses double-quoted string": Case("lenses", 'SELECT STREAM a.x FROM a JOIN b ON substr(b.n, 1) = "J"', exp.Literal,
                                        lambda t: t.find(exp.Literal, bfs=False) is not None),
    "lenses lateral": Case("lenses", "SELECT STREAM m, r FROM b LATERAL xs AS rs LATERAL rs AS r", exp.Lateral),
    "lenses flatten": Case("lenses", "SELECT STREAM r FROM b LATERAL flatten([day, night]) AS r", exp.Lateral),
    "set option": Case("lenses", "SET defaults.topic.autocreate=true", SetOption,
                       lambda t: (t.option, t.value) == ("defaults.topic.autocreate", "true")),
    "set quoted option": Case("ksqldb", "SET 'streamjoin.allow_multi_column_keys'='true'", SetOption,
                              lambda t: t.option == "streamjoin.allow_multi_column_keys"),
    "set dashed option": Case("flink", "SET table.local-time-zone=UTC", SetOption, lambda t: t.value == "UTC"),
    "over range": Case("sqlstream", "SELECT STREAM rowtime FROM s.a OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS a "
                       "JOIN s.b OVER (ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS b ON (a.t = b.t)", SourceTable,
                       lambda t: t.find(SourceTable).args["window"].args["kind"] == "RANGE"),
    "named window": Case("sqlstream", "SELECT STREAM * FROM a OVER w JOIN b ON a.t = b.t WINDOW w AS (RANGE INTERVAL '1' "
                         "HOUR PRECEDING)", SourceTable),
    "natural": Case("sqlstream", "SELECT STREAM * FROM a NATURAL JOIN b", exp.Join),
    "using": Case("sqlstream", "SELECT STREAM * FROM e JOIN a USING (animal_id)", exp.Join),
    "cross": Case("sqlstream", "SELECT STREAM * FROM a CROSS JOIN b", exp.Join),
    "for system_time": Case("flink", "SELECT * FROM o LEFT JOIN p FOR SYSTEM_TIME AS OF o.t AS P ON o.id = P.id",
                            exp.Version),
    "interval between": Case("flink", "SELECT * FROM o, s WHERE o.id = s.oid AND o.t BETWEEN s.t - INTERVAL '4' HOUR "
                             "AND s.t", exp.Between),
    "lateral table": Case("flink", "SELECT * FROM Orders AS o, LATERAL TABLE (Rates(o.rowtime)) AS r", exp.Lateral),
    "cast key": Case("ksqldb", "SELECT * FROM c JOIN u ON CAST(c.id AS BIGINT) = u.id", exp.Cast),
    "insert into": Case("lenses", "INSERT INTO result SELECT STREAM a.x FROM a JOIN b ON a.id = b.id", exp.Insert),
    "flink back-quoted identifiers": Case("flink", "SELECT L.`int`, `timestamp` FROM T1 L", exp.Identifier,
                                          lambda t: t.expressions[0].this.quoted and t.expressions[0].name == "int"),
    "flink tumble": Case("flink", "SELECT * FROM TABLE(TUMBLE(TABLE T1, DESCRIPTOR(rowtime), INTERVAL '5' SECOND)) L",
                         WindowTableFunction, lambda t: (t.find(WindowTableFunction).args["kind"],
                                                         t.find(WindowTableFunction).alias) == ("TUMBLE", "L")),
    "flink hop with offset": Case("flink", "SELECT * FROM TABLE(HOP(TABLE T1, DESCRIPTOR(ts), INTERVAL '5' SECOND, "
                                  "INTERVAL '10' SECOND, INTERVAL '1' SECOND))", WindowTableFunction,
                                  lambda t: t.find(WindowTableFunction).args["offset"] is not None),
    "flink cumulate named arguments": Case("flink", "SELECT * FROM TABLE(CUMULATE(DATA => TABLE T1, TIMECOL => "
                                           "DESCRIPTOR(ts), STEP => INTERVAL '1' SECOND, SIZE => INTERVAL '4' SECOND))",
                                           WindowTableFunction,
                                           lambda t: t.find(WindowTableFunction).args["time_column"].name == "ts"),
    "flink create temporary view": Case("flink", "CREATE TEMPORARY VIEW v AS SELECT * FROM t WHERE a > 1", exp.Create),
    "flink join hints": Case("flink", "SELECT /*+ STATE_TTL('o'='1d'), BROADCAST(p) */ o.a FROM o JOIN p ON o.a = p.a",
                             exp.Hint),
    "lenses insert store key and value as": Case(
        "lenses", "INSERT INTO r STORE KEY AS STRING VALUE AS AVRO SELECT STREAM * FROM s", StoreFormats,
        lambda t: (t.args["stored"].args["key"].name, t.args["stored"].args["value"].name) == ("STRING", "AVRO")),
    "lenses insert store value as": Case("lenses", "INSERT INTO r STORE VALUE AS JSON SELECT STREAM * FROM s",
                                         StoreFormats, lambda t: t.args["stored"].args.get("key") is None),
    # ksqlDB's INSERT INTO ... EMIT CHANGES: the trailing clauses belong to the INSERT's query
    "ksqldb insert emit changes": Case("ksqldb", "INSERT INTO x SELECT * FROM s PARTITION BY a EMIT CHANGES",
                                       exp.Insert, lambda t: isinstance(t, exp.Insert)
                                       and isinstance(t.expression, StreamQuery)
                                       and [e.sql() for e in t.expression.args["partition_by"]] == ["a"]
                                       and t.expression.args["emit"].name == "CHANGES"),
    "group by after join": Case("lenses", "SELECT STREAM t.n, COUNT(*) AS c FROM s JOIN t ON t.id = s.id GROUP BY t.n",
                                exp.Group),
}


@pytest.mark.parametrize("name", CASES)
def test_clause_parses_and_round_trips(name):
    case = CASES[name]
    dialect = dialect_for(case.flavour)
    [tree] = parse(case.sql, case.flavour)
    assert isinstance(tree, case.node) or tree.find(case.node) is not None
    assert case.check(tree)
    printed = tree.sql(dialect=dialect)
    [again] = parse(printed, case.flavour)
    assert again == tree or again.sql(dialect=dialect) == printed


def test_several_statements_split_on_semicolons():
    statements = parse("SET a=1;\nWITH v AS (SELECT STREAM * FROM s);\nINSERT INTO r SELECT STREAM * FROM v;", "lenses")
    assert [type(s) for s in statements] == [SetOption, ViewDefinition, exp.Insert]


def test_flavour_comment():
    assert declared_flavour("-- dialect: flink\nSELECT 1") == "flink"
    assert declared_flavour("SELECT 1") == "ksqldb"


@pytest.mark.parametrize("sql", ["SELECT s.v->f FROM s", "SELECT s.v->a->b, s.v->* FROM s"])
def test_arrow_is_a_struct_field_and_prints_back(sql):
    [statement] = parse(sql, "ksqldb")
    assert all(isinstance(e.unalias(), exp.Dot) for e in statement.expressions)
    assert statement.sql(dialect=StreamJoin()) == sql


@pytest.mark.parametrize("sql", [
    "SELECT x FROM t GROUP BY x WINDOW TUMBLING (SIZE 1 MINUTES, GRACE PERIOD 1 MILLISECONDS)",
    "SELECT x FROM t GROUP BY x WINDOW HOPPING (SIZE 5 SECONDS, ADVANCE BY 1 SECONDS, RETENTION 1 DAYS)",
    "SELECT x FROM t GROUP BY x WINDOW SESSION (30 SECONDS)",
])
def test_aggregation_windows_print_back(sql):
    [statement] = parse(sql, "ksqldb")
    assert statement.sql(dialect=StreamJoin()) == sql


def test_hopping_window_needs_advance():
    with pytest.raises(StreamJoinError, match="ADVANCE BY"):
        parse("SELECT x FROM t WINDOW HOPPING (SIZE 5 SECONDS) GROUP BY x", "ksqldb")


def test_column_types_sqlglot_does_not_know_and_header_columns_print_back():
    sql = ("CREATE STREAM L (A INT KEY, C BYTES HEADER('abc'), D ARRAY<STRUCT<key STRING, value BYTES>> HEADERS, "
           "E BYTES NOT NULL)")
    [statement] = parse(sql, "ksqldb")
    assert [c.args["type_text"].name for c in statement.args["columns"]][1:] == [
        "BYTES", "ARRAY<STRUCT<key STRING, value BYTES>>", "BYTES"]
    assert statement.sql(dialect=StreamJoin()) == sql


@pytest.mark.parametrize("sql, message", [
    ("SELECT * FROM TABLE(SESSION(TABLE t, DESCRIPTOR(ts), INTERVAL '1' SECOND))", "Expected TUMBLE, HOP or CUMULATE"),
    ("SELECT * FROM TABLE(HOP(TABLE t, DESCRIPTOR(ts)))", "HOP needs SLIDE"),
    ("SELECT * FROM TABLE(TUMBLE(TABLE t, ts, INTERVAL '1' SECOND))", "Expected DESCRIPTOR"),
])
def test_window_function_errors_are_positioned(sql, message):
    with pytest.raises(StreamJoinError) as error:
        parse(sql, "flink")
    assert message in str(error.value) and error.value.rule == "syntax" and error.value.line == 1
