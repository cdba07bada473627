"""Planner tests: which join node the inputs' kinds make, its window and semantics fields, the repartitions,
the result kind and ksqlDB's output key naming; and EXPLAIN's topology."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from sqlglot import exp

from streamjoin.plan import explain, plan_program
from streamjoin.plan import nodes as n
from streamjoin.plan.catalog import Catalog


def _src(name, kind, key, columns, partitions=1, timestamp=None):
    return {"name": name, "kind": kind, "topic": name, "partitions": partitions, "key": key,
            "columns": columns, "timestamp": timestamp}


CATALOG = Catalog.from_case_sources([
    _src("ls", "stream", ["id"], {"id": "STRING", "v": "STRING"}),
    _src("rs", "stream", ["id"], {"id": "STRING", "v": "STRING"}),
    _src("unkeyed", "stream", [], {"uid": "STRING", "url": "STRING"}),
    _src("lt", "table", ["id"], {"id": "STRING", "fk": "STRING", "v": "INT"}),
    _src("rt", "table", ["id"], {"id": "STRING", "v": "INT"}),
    _src("o", "stream", [], {"id": "INT", "ot": "TIMESTAMP(3)"}, timestamp="ot"),
    _src("s", "stream", [], {"oid": "INT", "st": "TIMESTAMP(3)"}, timestamp="st"),
    _src("stocks.q", "stream", [], {"TICKER": "STRING", "QTY": "INT"}),
    _src("stocks.p", "stream", [], {"TICKER": "STRING", "PRICE": "INT"}),
])


@dataclass
class Case:
    flavour: str
    sql: str
    join: type
    kind: str
    key: list[str]
    value: list[str]
    check: callable = lambda join: True


CASES = {
    # l@0 r@10s: joined (|10s| <= 15s); r@21s: outside the window; grace 5s keeps late rows until 20s past
    "stream-stream window": Case("ksqldb", "SELECT l.v AS L, r.v AS R FROM ls l JOIN rs r WITHIN 15 SECONDS GRACE PERIOD 5 SECONDS ON l.id = r.id",
                                 n.StreamStreamJoin, "stream", ["ID"], ["L", "R"],
                                 lambda j: (j.window.before_ms, j.window.after_ms, j.window.grace_ms, j.eager_outer) == (15000, 15000, 5000, False)),
    "stream-stream no grace is eager": Case("ksqldb", "SELECT l.v AS L FROM ls l LEFT JOIN rs r WITHIN (1 SECOND, 2 SECONDS) ON l.id = r.id",
                                            n.StreamStreamJoin, "stream", ["ID"], ["L"],
                                            lambda j: (j.window.before_ms, j.window.after_ms, j.eager_outer) == (1000, 2000, True)),
    "stream-table": Case("ksqldb", "SELECT s.v AS L, t.v AS R FROM ls s LEFT JOIN rt t ON s.id = t.id", n.StreamTableJoin, "stream", ["ID"], ["L", "R"]),
    "stream repartitioned": Case("ksqldb", "SELECT unkeyed.url FROM unkeyed JOIN rt ON unkeyed.uid = rt.id", n.StreamTableJoin, "stream", ["UID"], ["URL"],
                                 lambda j: isinstance(j.left, n.Repartition) and j.left.key[0].sql() == "unkeyed.uid"),
    "table-table pk": Case("ksqldb", "SELECT l.v AS L FROM lt l FULL OUTER JOIN rt r ON l.id = r.id", n.TableTableJoin, "table", ["KSQL_COL_0"], ["L"]),
    "foreign key": Case("ksqldb", "SELECT l.v AS L, r.v AS R FROM lt l LEFT JOIN rt r ON l.fk = r.id", n.ForeignKeyJoin, "table", ["ID"], ["L", "R"]),
    "projected key moves to key": Case("ksqldb", "SELECT r.id AS rid, s.v FROM ls s JOIN rt r ON s.id = r.id", n.StreamTableJoin, "stream", ["RID"], ["S_V"]),
    "star naming": Case("ksqldb", "SELECT * FROM ls a JOIN rt b ON a.id = b.id", n.StreamTableJoin, "stream", ["A_ID"], ["A_V", "B_ID", "B_V"]),
    "lenses key join": Case("lenses", "SELECT TABLE lt.fk, rt.v FROM lt JOIN rt", n.TableTableJoin, "table", ["_key"], ["fk", "v"],
                            lambda j: j.left_keys[0].sql() == "lt.id"),
    "lenses table RIGHT JOIN stream": Case("lenses", "WITH tv AS (SELECT TABLE * FROM rt);\n"
                                           "SELECT STREAM t.v, s.v AS sv FROM tv t RIGHT JOIN ls s ON t.id = s.id", n.StreamTableJoin, "stream",
                                           ["_key"], ["v", "sv"], lambda j: j.join_type == "LEFT" and j.left.alias == "s"),
    "lenses left re-emits": Case("lenses", "WITH tv AS (SELECT TABLE * FROM rt);\n"
                                 "SELECT STREAM s.v FROM ls s LEFT JOIN tv t ON t.id = s.id", n.StreamTableJoin, "stream", ["_key"], ["v"],
                                 lambda j: j.reemit_on_late_table_row),
    "flink interval": Case("flink", "SELECT o.id FROM o, s WHERE o.id = s.oid AND o.ot BETWEEN s.st - INTERVAL '4' HOUR AND s.st", n.IntervalJoin,
                           "stream", [], ["id"], lambda j: (j.bounds.lower_ms, j.bounds.upper_ms) == (-14_400_000, 0)),
    "flink regular": Case("flink", "SELECT ls.v, rt.v AS tv FROM ls JOIN rt ON ls.id = rt.id", n.RegularJoin, "table", [], ["v", "tv"]),
    "sqlstream over windows": Case("sqlstream", "SELECT STREAM rowtime, p.ticker, q.qty FROM stocks.q OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS q "
                                   "JOIN stocks.p OVER (ROWS BETWEEN 5 PRECEDING AND CURRENT ROW) AS p ON (q.ticker = p.ticker)",
                                   n.OverWindowJoin, "stream", [], ["TICKER", "QTY"],
                                   lambda j: (j.left_window, j.right_window) == (n.RelationWindow("RANGE", 60000), n.RelationWindow("ROWS", 5))),
    "sqlstream natural": Case("sqlstream", "SELECT STREAM * FROM stocks.q NATURAL JOIN stocks.p", n.OverWindowJoin, "stream", [], ["TICKER", "QTY", "PRICE"],
                              lambda j: [(k.table, k.name) for k in j.left_keys] == [("stocks.q", "TICKER")]),
    "sqlstream cross": Case("sqlstream", "SELECT STREAM a.qty, b.price FROM stocks.q AS a CROSS JOIN stocks.p AS b", n.CrossJoin, "stream", [], ["QTY", "PRICE"]),
    "sqlstream stream-table snapshot": Case("sqlstream", "SELECT STREAM id, e.v, a.v AS tv FROM ls e JOIN rt a USING (id)", n.StreamTableJoin, "stream", [], ["ID", "V", "TV"],
                                            lambda j: j.static_snapshot),
}


@pytest.mark.parametrize("name", CASES)
def test_join_plan(name):
    case = CASES[name]
    [query] = plan_program(case.sql, CATALOG, case.flavour).queries
    join = query.project.child
    while not isinstance(join, n.Join):
        join = join.children[0]
    assert type(join) is case.join
    assert query.sink.kind == case.kind
    assert list(query.key_columns) == case.key
    assert list(query.value_columns) == case.value
    assert case.check(join)
    assert all(c.table for key in join.left_keys + join.right_keys for c in key.find_all(exp.Column))


def test_ddl_and_csas_chain_update_the_catalog():
    program = plan_program(
        "CREATE STREAM clicks (userId BIGINT, url STRING) WITH (kafka_topic='clickstream', value_format='json', partitions=2);\n"
        "CREATE TABLE users (userId BIGINT PRIMARY KEY, fullName STRING) WITH (kafka_topic='users', partitions=2);\n"
        "CREATE STREAM enriched WITH (PARTITIONS=2) AS SELECT users.userId AS uid, clicks.url FROM clicks JOIN users ON clicks.userId = users.userId;\n"
        "CREATE STREAM enriched_again AS SELECT * FROM enriched PARTITION BY url;", Catalog(), "ksqldb")
    clicks = program.catalog.get("CLICKS")
    assert (clicks.topic, clicks.partitions, clicks.key_columns) == ("clickstream", 2, ())
    assert program.catalog.get("users").key_columns == ("USERID",)  # unquoted: folded
    first, second = program.queries
    assert (first.key_columns, first.value_columns, first.sink.topic) == (("UID",), ("URL",), "ENRICHED")
    assert (second.key_columns, second.value_columns) == (("URL",), ("UID",))


def test_flink_ddl_kinds():
    program = plan_program(
        "CREATE TABLE o (id STRING, t TIMESTAMP(3), WATERMARK FOR t AS t - INTERVAL '5' SECOND) WITH ('topic'='o');\n"
        "CREATE TABLE p (id STRING, t TIMESTAMP(3) METADATA FROM 'timestamp' VIRTUAL, PRIMARY KEY(id) NOT ENFORCED,"
        " WATERMARK FOR t AS t) WITH ('connector'='kafka', 'topic'='products');\n"
        "CREATE TABLE c (id STRING, t TIMESTAMP(3) METADATA FROM 'value.source.timestamp' VIRTUAL, PRIMARY KEY(id) NOT "
        "ENFORCED, WATERMARK FOR t AS t) WITH ('connector'='kafka', 'topic'='cdc', 'value.format'='debezium-json');",
        Catalog(), "flink")
    o, p, c = (program.catalog.get(name) for name in "opc")
    assert (o.kind, o.timestamp, o.watermark_delay_ms) == ("stream", "t", 5000)
    assert (p.kind, p.key_columns, p.topic, p.virtual_columns) == ("versioned_table", ("id",), "products", ("t",))
    # a changelog's version time is the database's, from the envelope; its key is read from the value
    assert (c.kind, c.key_format, c.virtual_columns, c.metadata_columns) == \
        ("versioned_table", "DEBEZIUM-JSON", (), (("t", "value.source.timestamp"),))


@pytest.mark.parametrize("with_options, expected", [
    # (kind, key columns, key format, JSON key an object)
    ("'connector'='upsert-kafka', 'key.format'='json', 'value.format'='json', 'value.fields-include'='EXCEPT_KEY'",
     ("table", ("id",), "JSON", True)),
    ("'connector'='upsert-kafka', 'key.format'='kafka', 'value.format'='json'",
     ("table", ("id",), "KAFKA", False)),
    ("'connector'='kafka', 'key.fields'='id', 'key.format'='json'", ("stream", ("id",), "JSON", True)),
    ("'connector'='kafka', 'key.fields'='v;id', 'key.format'='json'", ("stream", ("v", "id"), "JSON", True)),
])
def test_flink_kafka_key_options(with_options, expected):
    primary = ", PRIMARY KEY (id) NOT ENFORCED" if "upsert" in with_options else ""
    program = plan_program(f"CREATE TABLE u (id STRING, v INT{primary}) WITH ('topic'='u', {with_options});",
                           Catalog(), "flink")
    u = program.catalog.get("u")
    assert (u.kind, u.key_columns, u.key_format, u.wrap_single_key) == expected


def test_explain_shows_topology():
    [query] = plan_program("SELECT unkeyed.url FROM unkeyed JOIN rt ON unkeyed.uid = rt.id", CATALOG, "ksqldb").queries
    text = explain(query)
    for part in ("Sink query_1", "Project", "StreamTableJoin INNER", "Repartition (join key)", "Source unkeyed", "output key: [UID]"):
        assert part in text, text


@pytest.mark.parametrize("window, shown", [
    ("TUMBLING (SIZE 1 MINUTE)", "window TUMBLING(1m) grace 1439m (every update)"),
    ("HOPPING (SIZE 10 SECONDS, ADVANCE BY 5 SECONDS, GRACE PERIOD 0 SECONDS) GROUP BY id EMIT FINAL",
     "window HOPPING(10s, 5s) grace 0ms (each window once, when it closes)"),
    ("SESSION (30 SECONDS, GRACE PERIOD 1 MINUTE)", "window SESSION(30s) grace 1m (every update)"),
])
def test_explain_shows_the_aggregation_window(window, shown):
    group = "" if "GROUP BY" in window else " GROUP BY id"
    [query] = plan_program(f"CREATE TABLE t AS SELECT id, COUNT(*) AS n FROM ls WINDOW {window}{group};", CATALOG,
                           "ksqldb").queries
    assert shown in explain(query)


@pytest.mark.parametrize("setting, flavour, expected", [
    ("", "ksqldb", False), ("", "lenses", True),
    ("SET 'streamjoin.reemit_on_table_update'='true';\n", "ksqldb", True),
    ("SET 'streamjoin.reemit_on_table_update'='false';\n", "lenses", False),
])
def test_reemission_default_by_flavour_and_option(setting, flavour, expected):
    select = "WITH tv AS (SELECT TABLE * FROM rt);\nSELECT STREAM s.v FROM ls s LEFT JOIN tv t ON s.id = t.id" \
        if flavour == "lenses" else \
        "SELECT s.v FROM ls s LEFT JOIN rt t ON s.id = t.id"
    [query] = plan_program(setting + select, CATALOG, flavour).queries
    assert query.project.child.reemit_on_late_table_row is expected


@pytest.mark.parametrize("setting, expected", [
    ("", True),  # ksqlDB's engine: Kafka Streams' window stores
    ("SET 'streamjoin.window_store_retention'='true';\n", True),
    ("SET 'streamjoin.window_store_retention'='false';\n", False),  # ksqlDB's documentation
])
def test_window_store_retention_by_option(setting, expected):
    [query] = plan_program(setting + "SELECT s.v, o.v AS ov FROM ls s LEFT JOIN rs o WITHIN 10 SECONDS "
                           "GRACE PERIOD 5 SECONDS ON s.id = o.id", CATALOG, "ksqldb").queries
    join = query.project.child
    assert join.store_retention is expected
    assert ("window_store_retention" in explain(query)) is expected
