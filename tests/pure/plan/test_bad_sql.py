"""Every statement of the bad-SQL corpus fails when its file is loaded (as Dagster loads the
definitions) with its rule at its file, line and column, and `streamjoin explain` prints that
error, never a traceback. Valid statements near the corpus's rules still plan."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from streamjoin.app.project import load_project
from streamjoin.cli import main
from streamjoin.dialect import StreamJoinError
from tests.pure.plan.bad_sql import CASES, SOURCES, Case


def project_with(root: Path, case: Case) -> Path:
    """A sql/ folder whose one query file is the case, beside its flavour's sources.sql."""
    folder = root / case.flavour
    folder.mkdir(parents=True)
    (folder / "sources.sql").write_text(SOURCES[case.flavour])
    sql = case.sql if isinstance(case.sql, bytes) else case.sql.encode()
    (folder / "bad.sql").write_bytes(sql)
    return folder / "bad.sql"


def name(case: Case) -> str:
    return f"{case.flavour}:{case.rule}:{case.sql[:40]!r}"


def test_the_corpus_covers_every_flavour():
    per_flavour = Counter(case.flavour for case in CASES)
    assert len(CASES) >= 100 and set(per_flavour) == set(SOURCES) and min(per_flavour.values()) >= 20


@pytest.mark.parametrize("case", CASES, ids=name)
def test_loading_fails_with_rule_and_position(case: Case, tmp_path: Path):
    path = project_with(tmp_path, case)
    with pytest.raises(StreamJoinError) as caught:
        load_project(tmp_path)
    error = caught.value
    assert (error.rule, error.file, error.line, error.col) == (case.rule, str(path), case.line, case.col), str(error)
    assert str(error).startswith(f"{path}:{case.line}:{case.col}: [{case.rule}] ")
    assert error.reason and "Traceback" not in str(error) and "<class" not in str(error)
    assert "^" in error.snippet or not error.sql.strip()


@pytest.mark.parametrize("case", CASES, ids=name)
def test_explain_prints_the_positioned_error(case: Case, tmp_path: Path, capsys):
    path = project_with(tmp_path, case)
    assert main(["explain", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:{case.line}:{case.col}: [{case.rule}] ") and "Traceback" not in err, err


ACCEPTED = {
    "ksqldb": [
        "SELECT * FROM pageviews WHERE viewtime > " + "(" * 50 + "1" + ")" * 50 + ";",
        "SELECT * FROM pageviews WHERE " + " OR ".join(f"viewtime = {i}" for i in range(90)) + ";",
        "CREATE STREAM a AS SELECT p.userid AS k, p.pageid FROM pageviews p JOIN users u ON p.userid = u.userid;\n"
        "CREATE STREAM b AS SELECT * FROM a;",  # b reads what a writes, typed once a is compiled
        "CREATE STREAM s (id STRING KEY) WITH (kafka_topic='s');\n"  # declared again: OR REPLACE says so
        "CREATE OR REPLACE STREAM s (id STRING KEY, ts BIGINT) WITH (kafka_topic='s', timestamp='ts', partitions=3);\n"
        "SELECT * FROM s;",
        "SELECT CAST(pageid AS DECIMAL(38, 38)) AS d FROM pageviews;",
        "SELECT pageid, COUNT(*) AS n FROM pageviews GROUP BY pageid HAVING COUNT(*) > 1;",
        "CREATE TABLE per_minute AS SELECT pageid, COUNT(*) AS n FROM pageviews "
        "WINDOW TUMBLING (SIZE 1 MINUTE, GRACE PERIOD 0 SECONDS) GROUP BY pageid EMIT FINAL;",
        "CREATE STREAM pv2 (userid STRING KEY, viewtime BIGINT, pageid STRING) WITH (kafka_topic='pv2', "
        "value_format='JSON', partitions=2);\nINSERT INTO pv2 SELECT * FROM pageviews EMIT CHANGES;",
    ],
    "flink": [
        "SELECT v.url, l.label FROM visits v JOIN labels FOR SYSTEM_TIME AS OF v.proc AS l ON v.url = l.label_id;",
        "SELECT o.order_id FROM orders o JOIN shipments s ON o.order_id = s.ship_order "
        "AND o.order_time BETWEEN s.ship_time - INTERVAL '4' HOUR AND s.ship_time;",
        "SELECT order_id, TRY_CAST(note AS INT) AS n FROM orders;",
        "CREATE TABLE pairs (a STRING, b STRING, v INT, PRIMARY KEY (a, b) NOT ENFORCED) "
        "WITH ('topic' = 'pairs', 'key.format' = 'json');\nSELECT a, b, v FROM pairs;",
        "SELECT product_id, COUNT(*) AS n FROM orders GROUP BY product_id HAVING COUNT(*) > 1;",
        # the document's connector options, as written (the CDC format and its metadata aside)
        "CREATE TABLE products2 (product_id STRING, price DECIMAL(10, 4)) WITH ('connector' = 'kafka', "
        "'topic' = 'products', 'scan.startup.mode' = 'earliest-offset', "
        "'properties.bootstrap.servers' = 'localhost:9092', 'properties.group.id' = 'g', 'value.format' = 'json');\n"
        "SELECT product_id FROM products2;",
    ],
    "lenses": [
        "SELECT STREAM o.item FROM orders o JOIN payments p ON o._key = p._key WITHIN 5s;",
        "WITH customersTable AS (SELECT TABLE * FROM customers);\n"
        "SELECT STREAM customersTable.name, orders.item FROM orders JOIN customersTable "
        "ON customersTable.id = orders.customer_id;",
        # an intermediate topic in the key format of the other input (the document's remedy), then the join
        "INSERT INTO refunds_by_int STORE KEY AS INT VALUE AS JSON SELECT STREAM * FROM refunds;",
        "INSERT INTO out STORE KEY AS INT VALUE AS AVRO SELECT STREAM o.item FROM orders o JOIN payments p "
        "ON o._key = p._key WITHIN 5s;",
        "INSERT INTO items STORE VALUE AS STRING SELECT STREAM item FROM orders;",
        # a view keyed by its own projection, joined within one partition (nothing to move)
        "WITH v AS (SELECT STREAM customer_id AS _key, item FROM orders);\n"
        "WITH c AS (SELECT TABLE * FROM customers);\nSELECT STREAM v.item, c.name FROM v JOIN c;",
    ],
    "sqlstream": [
        "SELECT STREAM a.ticker FROM order_quantity OVER (RANGE BETWEEN INTERVAL '5' MINUTE PRECEDING AND "
        "INTERVAL '1' MINUTE PRECEDING) AS a JOIN stock_price OVER w AS b ON a.ticker = b.symbol "
        "WINDOW w AS (ROWS 5 PRECEDING);",
        # s-Server joins a table on any column: it needs no PRIMARY KEY (table_requires_primary_key)
        "CREATE TABLE zoo (zoo_id INTEGER, city VARCHAR(10));\n"
        "SELECT STREAM s.row_id, z.city FROM sightings s JOIN zoo z ON s.seen_id = z.zoo_id;",
        "SELECT STREAM ticker, SUM(quantity) AS q FROM order_quantity GROUP BY ticker HAVING SUM(quantity) > 10;",
    ],
}


@pytest.mark.parametrize("flavour, sql", [(f, sql) for f, statements in ACCEPTED.items() for sql in statements])
def test_valid_statements_near_the_rules_still_plan(flavour: str, sql: str, tmp_path: Path):
    project_with(tmp_path, Case(sql, flavour, "", 0, 0))
    assert load_project(tmp_path).queries


def test_a_byte_order_mark_is_not_text(tmp_path: Path):
    """Editors may start a UTF-8 file with a BOM: it is dropped, and `-- dialect:` still counts."""
    bom = b"\xef\xbb\xbf-- dialect: ksqldb\nSELECT order_id FROM orders;"
    path = project_with(tmp_path, Case(bom, "flink", "", 0, 0))  # a flink folder: the comment wins
    (query,) = load_project(tmp_path).queries
    assert (query.path, query.dialect) == (path, "ksqldb")
