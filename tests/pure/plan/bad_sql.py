"""The bad-SQL corpus: statements a person could write that must each fail at plan time with a
rule and the position of the offending text, never a Python traceback, never accepted with a
changed meaning. Each case is a query file in a folder of its flavour, beside the `sources.sql`
below; `sql` is the file's text (bytes where the encoding is the point). The expected line and
column are where the error points, the rule is its name (docs/sql-reference.md lists them).

Covered elsewhere: type mismatches in WHERE/HAVING comparisons and ksqlDB column naming
(tests/pure/plan/test_ksqldb_projection.py), identifier case folding and the WITH properties
beyond the ones checked here (tests/pure/plan/test_ddl.py)."""

from __future__ import annotations

from dataclasses import dataclass

K, F, L, S = "ksqldb", "flink", "lenses", "sqlstream"


@dataclass(frozen=True)
class Case:
    sql: str | bytes
    flavour: str
    rule: str
    line: int
    col: int


JDBC = ("CREATE TABLE c (id INT, name STRING) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://h/db', "
        "'table-name' = 'c');\n")
LOOKUP_PROBE = "CREATE TABLE k (id INT, pt AS PROCTIME(), ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('topic' = 'k');\n"

# Each flavour's sources.sql: the relations the cases read.
SOURCES = {
    "ksqldb": """-- dialect: ksqldb
CREATE STREAM pageviews (userid STRING KEY, viewtime BIGINT, pageid STRING)
  WITH (kafka_topic='pageviews', value_format='JSON', partitions=2, timestamp='viewtime');
CREATE STREAM clicks (userid STRING KEY, url STRING, ts BIGINT)
  WITH (kafka_topic='clicks', value_format='JSON', partitions=2);
CREATE TABLE users (userid STRING PRIMARY KEY, regionid STRING, age INT)
  WITH (kafka_topic='users', value_format='JSON', partitions=2);
CREATE TABLE regions (regionid STRING PRIMARY KEY, name STRING)
  WITH (kafka_topic='regions', value_format='JSON', partitions=4);
""",
    "flink": """-- dialect: flink
CREATE TABLE orders (order_id STRING, product_id STRING, amount INT, note STRING,
  order_time TIMESTAMP(3), WATERMARK FOR order_time AS order_time - INTERVAL '5' SECOND)
  WITH ('connector' = 'kafka', 'topic' = 'orders', 'value.format' = 'json');
CREATE TABLE shipments (ship_id STRING, ship_order STRING, ship_time TIMESTAMP(3),
  WATERMARK FOR ship_time AS ship_time) WITH ('topic' = 'shipments');
CREATE TABLE products (product_id STRING, price DECIMAL(10, 2), update_time TIMESTAMP(3),
  PRIMARY KEY (product_id) NOT ENFORCED, WATERMARK FOR update_time AS update_time) WITH ('topic' = 'products');
CREATE TABLE labels (label_id STRING, label STRING, PRIMARY KEY (label_id) NOT ENFORCED) WITH ('topic' = 'labels');
CREATE TABLE visits (url STRING, proc AS PROCTIME()) WITH ('topic' = 'visits');
""",
    "lenses": """-- dialect: lenses
CREATE TABLE customers (_key INT PRIMARY KEY, id INT, name STRING)
  WITH (kafka_topic='customers', value_format='JSON', partitions=1);
CREATE STREAM orders (_key INT KEY, customer_id INT, item STRING)
  WITH (kafka_topic='orders', value_format='JSON', partitions=1);
CREATE STREAM payments (_key INT KEY, paid INT)
  WITH (kafka_topic='payments', value_format='JSON', partitions=1);
CREATE STREAM readings (_key STRING KEY, meter_id INT, nested ARRAY<INT>)
  WITH (kafka_topic='readings', value_format='JSON', partitions=1);
CREATE STREAM refunds (_key INT KEY, amount INT)
  WITH (kafka_topic='refunds', key_format='JSON', value_format='JSON', partitions=1);
CREATE TABLE accounts (_key INT PRIMARY KEY, owner STRING)
  WITH (kafka_topic='accounts', value_format='JSON', partitions=2);
CREATE STREAM transfers (_key INT KEY, account INT, sum INT)
  WITH (kafka_topic='transfers', value_format='JSON', partitions=2);
""",
    "sqlstream": """-- dialect: sqlstream
CREATE STREAM order_quantity (order_time TIMESTAMP, ticker VARCHAR(5), quantity INTEGER);
CREATE STREAM stock_price (price_time TIMESTAMP, symbol VARCHAR(5), price INTEGER);
CREATE TABLE animals (animal_id INTEGER PRIMARY KEY, name VARCHAR(10), edible BOOLEAN);
CREATE STREAM sightings (row_id INTEGER, seen_id INTEGER);
""",
}

CASES = [
    # -- reading the file: empty, comments only, bytes that are not UTF-8, an unknown dialect
    Case(b'', K, "no-query", 1, 1),
    Case(b'-- nothing but a comment\n', K, "no-query", 1, 1),
    Case(b';;;', K, "no-query", 1, 1),
    Case(b'\n\n   \n', F, "no-query", 1, 1),
    Case(b'SELECT * FROM pageviews;\n\xff\xfe garbage', K, "encoding", 2, 1),
    Case(b'\x89PNG\r\n\x1a\n\x00\x00', F, "encoding", 1, 1),
    Case(b"SELECT STREAM item FROM orders WHERE item = 'caf\xe9';", L, "encoding", 1, 49),
    Case(b'-- dialect: sqlstreem\nSELECT STREAM * FROM order_quantity;', S, "dialect", 1, 13),
    # -- tokens and syntax: unterminated strings, names and comments; statements that end early
    Case("SELECT * FROM pageviews WHERE pageid = 'home;", K, "syntax", 1, 40),
    Case('SELECT "order_id FROM orders;', F, "syntax", 1, 8),
    Case("SELECT STREAM `item FROM orders;", L, "syntax", 1, 15),
    Case("SELECT STREAM * FROM order_quantity /* never closed", S, "syntax", 1, 37),
    Case("SELECT * FROM", K, "syntax", 1, 10),
    Case("SELECT * FROM pageviews WHERE", K, "syntax", 1, 25),
    Case("SELECT order_id FROM orders WHERE amount >", F, "syntax", 1, 42),
    Case("SELECT STREAM item FROM orders PARTITION BY;", L, "syntax", 1, 32),
    Case("SELECT * FROM pageviews EMIT SOMETIME;", K, "syntax", 1, 30),
    Case("CREATE STREAM s (id STRING KEY, v FOO) WITH (kafka_topic='s');", K, "syntax", 1, 35),
    Case("CREATE STREAM s (id STRING KEY) WITH (kafka_topic=);", K, "syntax", 1, 51),
    Case("SELECT * FROM pageviews p JOIN clicks c WITHIN 5 WEEKS ON p.userid = c.userid;", K, "syntax", 1, 50),
    # -- statements streamjoin does not run
    Case("DROP", K, "unsupported-statement", 1, 1),
    Case("DROP STREAM pageviews;", K, "unsupported-statement", 1, 1),
    Case("SELECT * FROM pageviews;\nTERMINATE q1;", K, "unsupported-statement", 2, 1),
    Case("EXPLAIN SELECT * FROM orders;", F, "unsupported-statement", 1, 1),
    Case("ALTER TABLE orders RENAME TO orders_v2;", F, "unsupported-statement", 1, 1),
    Case("SHOW TABLES;", L, "unsupported-statement", 1, 1),
    Case("INSERT INTO out_stream VALUES (1, 2);", S, "unsupported-statement", 1, 32),
    Case("CREATE TABLE t (userid STRING PRIMARY KEY, v INT) WITH (kafka_topic='t', value_format='JSON');", K, "no-query", 1, 1),
    Case("CREATE STREAM s (a INTEGER);\nCREATE STREAM s (b INTEGER);", S, "duplicate-relation", 2, 15),
    Case("SELECT FROM pageviews;", K, "empty-select", 1, 1),
    Case("SELECT STREAM order_quantity.ticker;", S, "missing-from", 1, 1),
    # -- nesting deeper than MAX_NESTING degrades to a positioned error
    Case("SELECT * FROM pageviews WHERE viewtime > " + "(" * 150 + "1" + ")" * 150 + ";", K, "too-deeply-nested", 1, 142),
    Case("SELECT order_id FROM orders WHERE " + " OR ".join(f"amount = {i}" for i in range(120)) + ";", F, "too-deeply-nested", 1, 370),
    Case("SELECT STREAM " + "concat(" * 110 + "item" + ", 'x')" * 110 + " AS c FROM orders;", L, "too-deeply-nested", 1, 721),
    Case("SELECT STREAM * FROM order_quantity WHERE quantity > " + "(" * 5000 + "1" + ")" * 5000 + ";", S, "too-deeply-nested", 1, 154),
    # -- declarations: properties, column types, keys, formats, event time
    Case("CREATE STREAM s (id STRING KEY) WITH (kafka_topic='s', partitions='abc');", K, "property-value", 1, 67),
    Case("CREATE STREAM s (id STRING KEY) WITH (kafka_topic='s', partitions=-3);", K, "property-value", 1, 67),
    Case("CREATE STREAM s (id STRING KEY) WITH (kafka_topic='s', partitions=0);", K, "property-value", 1, 67),
    Case("CREATE STREAM s (_key INT KEY) WITH (kafka_topic='s', partitions=1.5);", L, "property-value", 1, 66),
    Case("CREATE STREAM s (id STRING KEY, v DECIMAL(2, 5)) WITH (kafka_topic='s');", K, "column-type", 1, 33),
    Case("CREATE TABLE t (a STRING, p DECIMAL(40, 2)) WITH ('topic' = 't');", F, "column-type", 1, 27),
    Case("CREATE STREAM s (id STRING KEY, v ARRAY<INT) WITH (kafka_topic='s');", K, "syntax", 1, 44),
    Case("CREATE STREAM s (id STRING KEY, id INT) WITH (kafka_topic='s');", K, "duplicate-column", 1, 33),
    # header columns: BYTES for one header, ARRAY<STRUCT<KEY STRING, VALUE BYTES>> for all, each
    # header read once, never a key, only where the flavour reads headers
    Case("CREATE STREAM s (id STRING KEY, h STRING HEADER('k')) WITH (kafka_topic='s');", K, "header-column", 1, 33),
    Case("CREATE STREAM s (id STRING KEY, h ARRAY<BYTES> HEADERS) WITH (kafka_topic='s');", K, "header-column", 1, 33),
    Case("CREATE STREAM s (id STRING KEY, a BYTES HEADER('k'), b BYTES HEADER('k')) WITH (kafka_topic='s');", K,
         "header-column", 1, 54),
    Case("CREATE STREAM s (id STRING KEY, a ARRAY<STRUCT<KEY STRING, VALUE BYTES>> HEADERS,\n"
         "  b ARRAY<STRUCT<KEY STRING, VALUE BYTES>> HEADERS) WITH (kafka_topic='s');", K, "header-column", 2, 3),
    Case("CREATE STREAM s (id BYTES KEY HEADER('k'), v INT) WITH (kafka_topic='s');", K, "header-column", 1, 18),
    Case("CREATE TABLE t (id BYTES HEADER('k'), v INT, PRIMARY KEY (id)) WITH (kafka_topic='t');", K,
         "header-column", 1, 59),
    Case("CREATE TABLE t (a STRING, h BYTES HEADER('k')) WITH ('topic' = 't');", F, "header-column", 1, 27),
    Case("CREATE TABLE t (a STRING, A INT) WITH ('topic' = 't');", F, "duplicate-column", 1, 27),
    Case("CREATE STREAM s (id STRING KEY) WITH (kafka_topic='s', value_format='PARQUET');", K, "format", 1, 69),
    Case("CREATE STREAM s (id STRING KEY) WITH (kafka_topic='s', key_format='PARQUET');", K, "format", 1, 67),
    Case("CREATE TABLE t (a STRING) WITH ('topic' = 't', 'format' = 'avro');", F, "format", 1, 59),
    Case("CREATE STREAM s (a STRING KEY, b STRING KEY, v INT) WITH (kafka_topic='s');", K, "format", 1, 32),
    Case("CREATE STREAM s (a BOOLEAN KEY, v INT) WITH (kafka_topic='s');", K, "format", 1, 18),
    Case("CREATE STREAM s (a STRING KEY, v INT) WITH (kafka_topic='s', key_format='NONE');", K, "format", 1, 73),
    Case("CREATE STREAM s (a STRING KEY, v INT, w INT) WITH (kafka_topic='s', value_format='KAFKA');", K, "format", 1, 82),
    Case("CREATE STREAM s (_key INT KEY, tags ARRAY<STRING>) WITH (kafka_topic='s', value_format='DELIMITED');", L, "format", 1, 88),
    Case("CREATE TABLE t (id STRING, v INT) WITH (kafka_topic='t');", K, "table-primary-key", 1, 14),
    Case("CREATE TABLE t (id INT, v INT) WITH (kafka_topic='t');", L, "table-primary-key", 1, 14),
    Case("CREATE STREAM s (id STRING KEY, ts STRING) WITH (kafka_topic='s', timestamp='ts');", K, "timestamp-column", 1, 77),
    Case("CREATE STREAM s (id STRING KEY, ts BIGINT) WITH (kafka_topic='s', timestamp='tss');", K, "unknown-column", 1, 77),
    Case("CREATE TABLE t (a STRING, PRIMARY KEY (b) NOT ENFORCED) WITH ('topic' = 't');", F, "unknown-column", 1, 40),
    Case("CREATE TABLE t (a STRING, ts TIMESTAMP(3), WATERMARK FOR nope AS nope) WITH ('topic' = 't');", F, "unknown-column", 1, 58),
    Case("CREATE TABLE t (a STRING, ts STRING, WATERMARK FOR ts AS ts) WITH ('topic' = 't');", F, "watermark", 1, 52),
    Case("CREATE TABLE t (a STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '5') WITH ('topic' = 't');", F, "interval", 1, 78),
    Case("CREATE TABLE t (a STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts + INTERVAL '5' SECOND) WITH ('topic' = 't');", F, "watermark", 1, 64),
    Case("CREATE TABLE t (a STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '-5' SECOND) WITH ('topic' = 't');", F, "watermark", 1, 78),
    Case("CREATE TABLE t (a STRING, ts TIMESTAMP(3), u TIMESTAMP(3), WATERMARK FOR ts AS ts, WATERMARK FOR u AS u) WITH ('topic' = 't');", F, "watermark", 1, 98),
    Case("CREATE TABLE t (a STRING, b INT, total AS b * 2) WITH ('topic' = 't');", F, "computed-column", 1, 34),
    Case("CREATE TABLE t (a STRING, off STRING METADATA FROM 'offset' VIRTUAL) WITH ('topic' = 't');", F, "metadata-column", 1, 27),
    Case("CREATE TABLE t (a STRING, e INT METADATA FROM 'leader-epoch' VIRTUAL) WITH ('topic' = 't');", F, "metadata-column", 1, 27),
    Case("CREATE TABLE t (a STRING, ts STRING METADATA FROM 'timestamp') WITH ('topic' = 't');", F, "metadata-column", 1, 27),
    Case("CREATE TABLE t (a STRING, ts TIMESTAMP(3) METADATA FROM 'value.source.timestamp') WITH ('topic' = 't');", F,
         "metadata-column", 1, 27),  # the CDC envelope's time: JSON records have none
    Case("CREATE TABLE t (a STRING, b INT) WITH ('topic' = 't', 'value.format' = 'canal-json');", F,
         "changelog-primary-key", 1, 14),
    Case("CREATE TABLE t (a STRING, b INT) WITH ('connector' = 'upsert-kafka', 'key.format' = 'json', "
         "'value.format' = 'json');", F, "upsert-kafka-primary-key", 1, 14),
    Case("CREATE TABLE t (a STRING, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', "
         "'value.format' = 'json');", F, "upsert-kafka-format", 1, 14),
    Case("CREATE TABLE t (a STRING, b INT, PRIMARY KEY (a) NOT ENFORCED) WITH ('key.fields' = 'b');", F,
         "key-fields", 1, 85),
    Case("CREATE TABLE t (a STRING, b INT) WITH ('key.fields' = 'c');", F, "unknown-column", 1, 55),
    Case("CREATE TABLE t (a STRING) WITH ('value.fields-include' = 'SOME');", F, "property-value", 1, 58),
    Case("CREATE STREAM s;", S, "no-columns", 1, 15),
    # -- sinks: their properties and what their formats can hold
    Case("CREATE STREAM out WITH (value_format='PARQUET') AS SELECT * FROM pageviews;", K, "format", 1, 38),
    Case("CREATE STREAM out WITH (key_format='XML') AS SELECT * FROM pageviews;", K, "format", 1, 36),
    Case("CREATE STREAM out WITH (partitions=0) AS SELECT * FROM pageviews;", K, "property-value", 1, 36),
    Case("CREATE STREAM out WITH (kafka_topic='out', partitions='six') AS SELECT * FROM pageviews;", K, "property-value", 1, 55),
    Case("CREATE STREAM out WITH (value_format='KAFKA') AS SELECT pageid, viewtime FROM pageviews;", K, "format", 1, 38),
    Case("CREATE STREAM out WITH (key_format='NONE') AS SELECT * FROM pageviews;", K, "format", 1, 36),
    Case("CREATE STREAM out AS SELECT * FROM pageviews;\nCREATE STREAM out AS SELECT * FROM clicks;", K, "duplicate-relation", 2, 15),
    # -- clauses a continuous query cannot honour, subqueries, aliases
    Case("SELECT * FROM pageviews EMIT FINAL;", K, "emit-final", 1, 25),
    Case("SELECT * FROM pageviews LIMIT 5;", K, "unsupported-clause", 1, 31),
    Case("SELECT order_id FROM orders ORDER BY order_time;", F, "unsupported-clause", 1, 38),
    Case("SELECT DISTINCT product_id FROM orders;", F, "unsupported-clause", 1, 1),
    Case("SELECT pageid, viewtime FROM pageviews HAVING viewtime > 1;", K, "having", 1, 47),
    Case("SELECT TABLE item, COUNT(*) AS n FROM orders GROUP BY item HAVING COUNT(*) > 1;", L, "unsupported-clause", 1, 67),
    Case("SELECT order_id FROM orders UNION SELECT ship_order FROM shipments;", F, "unsupported-clause", 1, 1),
    Case("WITH big AS (SELECT * FROM orders WHERE amount > 10) SELECT order_id FROM big;", F, "unsupported-clause", 1, 6),
    Case("SELECT * FROM pageviews WHERE pageid IN (SELECT regionid FROM users);", K, "subquery", 1, 49),
    Case("SELECT * FROM pageviews p JOIN (SELECT * FROM users) u ON p.userid = u.userid;", K, "subquery", 1, 40),
    Case("SELECT STREAM o.item FROM (SELECT STREAM * FROM orders) o;", L, "subquery", 1, 42),
    Case("SELECT STREAM * FROM order_quantity AS a, order_quantity AS a WHERE a.ticker = a.ticker;", S, "duplicate-alias", 1, 43),
    Case("SELECT * FROM pageviews JOIN pageviews WITHIN 1 SECOND ON pageviews.userid = pageviews.userid;", K, "duplicate-alias", 1, 30),
    # -- join windows and the time clauses of the other join models; INTERVALs; s-Server windows
    Case("SELECT * FROM pageviews p JOIN clicks c GRACE PERIOD 5 SECONDS ON p.userid = c.userid;", K, "grace-without-within", 1, 41),
    Case("SELECT STREAM o.item FROM orders o JOIN payments p ON o._key = p._key GRACE PERIOD 5s;", L, "grace-without-within", 1, 71),
    Case("SELECT * FROM pageviews p JOIN clicks c WITHIN 999999999999 DAYS ON p.userid = c.userid;", K, "duration", 1, 48),
    Case("SELECT * FROM pageviews p JOIN clicks c WITHIN 1 SECOND GRACE PERIOD 99999999999999 DAYS ON p.userid = c.userid;", K, "duration", 1, 70),
    Case("SELECT o.order_id FROM orders o JOIN shipments s WITHIN 1 HOURS ON o.order_id = s.ship_order;", F, "time-clause", 1, 50),
    Case("SELECT STREAM a.ticker FROM order_quantity a JOIN stock_price b WITHIN 1 MINUTE ON a.ticker = b.symbol;", S, "time-clause", 1, 65),
    Case("SELECT * FROM pageviews OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS p JOIN clicks c WITHIN 1 SECOND ON p.userid = c.userid;", K, "time-clause", 1, 46),
    Case("SELECT o.order_id FROM orders OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS o;", F, "time-clause", 1, 52),
    Case("SELECT * FROM pageviews p JOIN users FOR SYSTEM_TIME AS OF p.viewtime AS u ON p.userid = u.userid;", K, "time-clause", 1, 60),
    Case("SELECT o.order_id FROM orders FOR SYSTEM_TIME AS OF PROCTIME() AS o JOIN products p ON o.product_id = p.product_id;", F, "time-clause", 1, 53),
    Case("SELECT o.order_id, p.price FROM orders o JOIN products FOR SYSTEM_TIME AS OF o.note AS p ON o.product_id = p.product_id;", F, "temporal-time-attribute", 1, 78),
    Case("SELECT o.order_id, l.label FROM orders o JOIN labels FOR SYSTEM_TIME AS OF o.order_time AS l ON o.product_id = l.label_id;", F, "temporal-versioned-table", 1, 47),
    Case("SELECT o.order_id FROM orders o JOIN shipments s ON o.order_id = s.ship_order AND o.order_time BETWEEN s.ship_time - INTERVAL '4' AND s.ship_time;", F, "interval", 1, 127),
    Case("SELECT o.order_id FROM orders o JOIN shipments s ON o.order_id = s.ship_order AND o.order_time BETWEEN s.ship_time - INTERVAL 'x' HOUR AND s.ship_time;", F, "interval", 1, 127),
    Case("SELECT o.order_id FROM orders o JOIN shipments s ON o.order_id = s.ship_order AND o.order_time BETWEEN s.ship_time - INTERVAL '1' MONTH AND s.ship_time;", F, "interval", 1, 127),
    Case("SELECT viewtime + INTERVAL 'x' HOUR AS t FROM pageviews;", K, "interval", 1, 28),
    Case("SELECT STREAM * FROM order_quantity OVER (RANGE INTERVAL '-1' MINUTE PRECEDING) AS a JOIN stock_price OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS b ON a.ticker = b.symbol;", S, "window-bound", 1, 58),
    Case("SELECT STREAM * FROM order_quantity OVER (RANGE INTERVAL '1' MINUTE FOLLOWING) AS a JOIN stock_price AS b ON a.ticker = b.symbol;", S, "window-bound", 1, 58),
    Case("SELECT STREAM * FROM order_quantity OVER (ROWS 'x' PRECEDING) AS a JOIN stock_price AS b ON a.ticker = b.symbol;", S, "window-bound", 1, 48),
    Case("SELECT STREAM * FROM order_quantity OVER (RANGE UNBOUNDED PRECEDING) AS a JOIN stock_price AS b ON a.ticker = b.symbol;", S, "window-bound", 1, 22),
    Case("SELECT STREAM * FROM order_quantity OVER (RANGE BETWEEN INTERVAL '1' MINUTE PRECEDING AND INTERVAL '5' MINUTE PRECEDING) AS a JOIN stock_price AS b ON a.ticker = b.symbol;", S, "window-bound", 1, 66),
    Case("SELECT STREAM * FROM order_quantity OVER w AS a JOIN stock_price OVER w AS b ON a.ticker = b.symbol;", S, "unknown-window", 1, 42),
    Case("SELECT STREAM * FROM order_quantity OVER (RANGE INTERVAL '1' PRECEDING) AS a JOIN stock_price AS b ON a.ticker = b.symbol;", S, "interval", 1, 58),
    # -- expressions that fail only once compiled
    Case("SELECT NOSUCHFN(userid) AS x FROM pageviews;", K, "unknown-function", 1, 8),
    Case("SELECT order_id, FROB(amount, 2) AS f FROM orders;", F, "unknown-function", 1, 18),
    Case("SELECT STREAM nosuch(item) FROM orders;", L, "unknown-function", 1, 15),
    Case("SELECT STREAM NOSUCHFN(ticker) AS t FROM order_quantity;", S, "unknown-function", 1, 15),
    Case("SELECT CAST(viewtime AS DECIMAL(2, 5)) AS d FROM pageviews;", K, "cast-type", 1, 33),
    Case("SELECT CAST(amount AS GEOMETRY) AS g FROM orders;", F, "cast-type", 1, 13),
    Case("SELECT pageid, viewtime FROM pageviews GROUP BY pageid;", K, "group-by", 1, 16),
    Case("SELECT order_id, ROW_NUMBER() OVER (PARTITION BY product_id ORDER BY order_time) AS n FROM orders;", F, "row-number", 1, 18),
    Case("SELECT LAG(amount) OVER (PARTITION BY product_id ORDER BY order_time) AS prev FROM orders;", F, "window-function", 1, 8),
    Case("SELECT STREAM cardinality(nested, 2) FROM readings;", L, "function-arguments", 1, 15),
    Case("SELECT STREAM quantity = INTERVAL '1' MINUTE AS b FROM order_quantity;", S, "interval", 1, 35),
    # -- more of each kind, in the flavours that have fewer above
    Case("SELECT STREAM o.item FROM orders o JOIN payments p WITHIN 999999999999d ON o._key = p._key;", L, "duration", 1, 59),
    Case("WITH missing AS (SELECT STREAM * FROM nowhere);", L, "unknown-relation", 1, 39),
    Case("SELECT STREAM item FROM orders LIMIT 10;", L, "unsupported-clause", 1, 38),
    Case("SELECT TABLE c.name FROM customers c JOIN customers c;", L, "duplicate-alias", 1, 43),
    Case("INSERT INTO out SELECT STREAM item FROM orders EMIT FINAL;", L, "emit-final", 1, 48),
    Case("SELECT STREAM o.item FROM orders o JOIN customers FOR SYSTEM_TIME AS OF o._key AS c ON c._key = o.customer_id;", L, "time-clause", 1, 73),
    Case("SELECT STREAM o.item FROM orders OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS o;", L, "time-clause", 1, 55),
    Case("SELECT STREAM CAST(item AS DECIMAL(50, 2)) AS d FROM orders;", L, "cast-type", 1, 36),
    Case("SET streamjoin.eager_outer;", L, "syntax", 1, 16),
    Case("CREATE STREAM s (_key INT KEY, _KEY INT) WITH (kafka_topic='s');", L, "duplicate-column", 1, 32),
    Case("SELECT STREAM o.item FROM orders o JOIN payments p ON o._key = p._key;", L, "stream-stream-window", 1, 41),
    Case("SELECT STREAM item FROM orders WHERE item IN (SELECT name FROM customers);", L, "subquery", 1, 54),
    Case("SELECT STREAM * FROM order_quantity ORDER BY order_time;", S, "unsupported-clause", 1, 46),
    Case("SELECT STREAM * FROM order_quantity a JOIN animals FOR SYSTEM_TIME AS OF a.order_time AS b ON a.quantity = b.animal_id;", S, "time-clause", 1, 74),
    Case("SELECT STREAM * FROM sightings s JOIN animals a ON s.seen_id > a.animal_id;", S, "theta-join", 1, 52),
    Case("SELECT o.order_id FROM orders o JOIN shipments s ON o.order_id = s.ship_order GRACE PERIOD 5 SECONDS;", F, "grace-without-within", 1, 79),
    Case("SELECT o.order_id FROM orders o JOIN visits FOR SYSTEM_TIME AS OF o.order_time AS v ON o.note = v.url;", F, "temporal-versioned-table", 1, 38),
    Case("SELECT * FROM pageviews p JOIN clicks c WITHIN 1 SECOND ON p.userid = c.userid ORDER BY p.viewtime;", K, "unsupported-clause", 1, 89),
    Case("SELECT * FROM pageviews p WITHIN 1 SECOND JOIN clicks c ON p.userid = c.userid;", K, "time-clause", 1, 27),
    Case("SELECT STREAM o.item FROM orders o WITHIN 5s JOIN payments p ON o._key = p._key;", L, "time-clause", 1, 36),
    Case("CREATE TABLE t (a STRING, b STRING, v INT, PRIMARY KEY (a, b) NOT ENFORCED) WITH ('topic' = 't');", F, "format", 1, 60),
    # -- issue 41: a query reading its own output, fractional durations, arithmetic on the wrong kinds,
    # two output columns of one name (ksqlDB names them <ALIAS>_<COLUMN>, s-Server <NAME>0: not errors)
    Case("CREATE STREAM x WITH (kafka_topic='pageviews') AS SELECT * FROM pageviews;", K, "output-is-input", 1, 35),
    Case("INSERT INTO orders SELECT * FROM orders;", F, "output-is-input", 1, 1),
    Case("INSERT INTO payments SELECT STREAM * FROM payments;", L, "output-is-input", 1, 1),
    Case("SELECT * FROM pageviews p JOIN clicks c WITHIN 1.5 SECONDS ON p.userid = c.userid;", K, "duration", 1, 48),
    Case("SELECT STREAM o.item FROM orders o JOIN payments p ON o._key = p._key WITHIN 1.5s;", L, "duration", 1, 78),
    Case("SELECT * FROM pageviews WHERE pageid + 1 > TRUE;", K, "arithmetic-types", 1, 31),
    Case("SELECT order_id FROM orders WHERE note * 2 > 1;", F, "arithmetic-types", 1, 35),
    Case("SELECT STREAM item FROM orders WHERE item - 1 > 0;", L, "arithmetic-types", 1, 38),
    Case("WITH r AS (SELECT STREAM amount FROM refunds);\nSELECT STREAM o.item FROM orders o JOIN r ON o._key = r._key WITHIN 5s;", L, "key-format", 2, 41),
    Case("SELECT STREAM o.item FROM orders o JOIN refunds r ON o._key = r._key WITHIN 5s;", L, "key-format", 1, 41),
    Case("WITH t AS (SELECT STREAM account AS _key, sum FROM transfers);\nWITH a AS (SELECT TABLE * FROM accounts);\nSELECT STREAM t.sum, a.owner FROM t JOIN a;", L, "view-repartition", 3, 42),
    Case("INSERT INTO out STORE VALUE AS XML SELECT STREAM item FROM orders;", L, "store-as", 1, 32),
    Case("SELECT TABLE name AS _key, id FROM customers;", L, "table-key", 1, 14),
    Case("INSERT INTO readings STORE VALUE AS JSON SELECT STREAM * FROM orders;", L, "store-as", 1, 22),
    Case("INSERT INTO out STORE KEY AS STRING SELECT STREAM item FROM orders;", L, "format", 1, 30),
    Case("INSERT INTO out STORE VALUE AS STRING SELECT STREAM item, customer_id FROM orders;", L, "format", 1, 32),
    Case("INSERT INTO x STORE VALUE AS JSON SELECT * FROM pageviews EMIT CHANGES;", K, "store-as", 1, 15),
    Case("SELECT STREAM * FROM sightings WHERE row_id * TRUE > 0;", S, "arithmetic-types", 1, 38),
    # -- issue 39: Flink connector options are read, and what the engine would not honour is refused
    Case("CREATE TABLE LatestRates (currency STRING, rate DECIMAL(32, 2), PRIMARY KEY (currency) NOT ENFORCED)\n"
         "  WITH ('connector' = 'hbase-2.2', 'table-name' = 'rates');\nSELECT currency FROM LatestRates;",
         F, "connector", 2, 23),
    Case("CREATE TABLE t (v STRING) WITH ('connector' = 'kafka', 'topic-pattern' = 'rates-.*');\nSELECT v FROM t;",
         F, "connector-option", 1, 74),
    Case("CREATE TABLE t (v STRING) WITH ('topic' = 'a;b');\nSELECT v FROM t;", F, "connector-option", 1, 43),
    Case("CREATE TABLE t (v STRING) WITH ('topic' = 't', 'scan.startup.mode' = 'timestamp');\nSELECT v FROM t;", F, "connector-option", 1, 70),
    Case("CREATE TABLE t (v STRING) WITH ('topic' = 't', 'scan.startup.mode' = 'specific-offsets', "
         "'scan.startup.specific-offsets' = 'p0:42');\nSELECT v FROM t;", F, "connector-option", 1, 124),
    Case("CREATE TABLE t (v STRING) WITH ('topic' = 't', 'scan.startup.mode' = 'group-offsets');\nSELECT v FROM t;", F, "connector-option", 1, 70),
    Case("CREATE TABLE t (v STRING) WITH ('topic' = 't', 'sink.partitioner' = 'round-robin');\nSELECT v FROM t;", F, "connector-option", 1, 69),
    Case("CREATE TABLE t (v STRING) WITH ('topic' = 't', 'sink.delivery-guarantee' = 'exactly_once');\nSELECT v FROM t;", F, "connector-option", 1, 76),
    Case("CREATE TABLE t (v STRING) WITH ('topic' = 't', 'sink.transactional-id-prefix' = 'sj');\nSELECT v FROM t;", F, "connector-option", 1, 81),
    Case("CREATE TABLE c (id INT) WITH ('connector' = 'jdbc', 'url' = 'jdbc:mysql://h:3306/db', 'table-name' = 'c');\nSELECT id FROM c;",
         F, "connector-option", 1, 61),
    Case("CREATE TABLE c (id INT) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://h/db', 'lookup.cache' = 'FULL', 'table-name' = 'c');\nSELECT id FROM c;",
         F, "connector-option", 1, 104),
    Case("CREATE TABLE c (id INT) WITH ('connector' = 'jdbc', 'url' = 'jdbc:postgresql://h/db', 'table-name' = 'c', 'scan.fetch-size' = '10');\nSELECT id FROM c;",
         F, "connector-option", 1, 127),
    Case("CREATE TABLE t (v STRING) WITH ('topic' = 't', 'scan.startup.mode' = 'from-the-top');\nSELECT v FROM t;",
         F, "connector-option", 1, 70),
    Case("CREATE TABLE t (v STRING) WITH ('topic' = 't', 'scan.startup.timestamp-millis' = '1');\nSELECT v FROM t;",
         F, "connector-option", 1, 82),
    # 'properties.*': a client property the engine's clients cannot honour, or written wrongly;
    # the error points at the value, (option, value, column)
    *(Case(f"CREATE TABLE t (v STRING) WITH ('topic' = 't', 'properties.{option}' = '{value}');\nSELECT v FROM t;",
           F, "connector-option", 1, col)
      for option, value, col in (("key.deserializer", "x.StringDeserializer", 80), ("enable.auto.commit", "true", 82),
                                 ("no.such.thing", "1", 77), ("sasl.jaas.config", "x required;", 80),
                                 ("security.protocol", "TLS", 81), ("ssl.truststore.location", "/ca.jks", 87))),
    Case("CREATE TABLE a (id INT) WITH ('topic' = 'a', 'properties.client.id' = 'one');\n"
         "CREATE TABLE b (id INT) WITH ('topic' = 'b', 'properties.client.id' = 'two');\n"
         "SELECT a.id FROM a JOIN b ON a.id = b.id;", F, "kafka-cluster", 3, 1),
    # a JDBC table is read by lookup joins only (FOR SYSTEM_TIME AS OF a processing-time attribute)
    Case(JDBC + LOOKUP_PROBE + "SELECT k.id, c.name FROM k JOIN c FOR SYSTEM_TIME AS OF k.ts ON k.id = c.id;",
         F, "lookup-join", 3, 57),
    Case(JDBC + "SELECT id FROM c;", F, "lookup-join", 2, 1),
    Case(JDBC + LOOKUP_PROBE + "SELECT k.id, c.name FROM k JOIN c ON k.id = c.id;", F, "lookup-join", 3, 33),
    Case(JDBC + "INSERT INTO c SELECT product_id, note FROM orders;", F, "lookup-join", 2, 13),
    Case("CREATE TABLE a (id INT) WITH ('topic' = 'a', 'properties.bootstrap.servers' = 'one:9092');\n"
         "CREATE TABLE b (id INT) WITH ('topic' = 'b', 'properties.bootstrap.servers' = 'two:9092');\n"
         "SELECT a.id FROM a JOIN b ON a.id = b.id;", F, "kafka-cluster", 3, 1),
    # the table an INSERT INTO writes is one of the query's: its cluster and client properties too
    Case("CREATE TABLE a (id INT) WITH ('topic' = 'a', 'properties.client.id' = 'one');\n"
         "CREATE TABLE o (id INT) WITH ('topic' = 'o', 'properties.client.id' = 'two');\n"
         "INSERT INTO o SELECT id FROM a;", F, "kafka-cluster", 3, 1),
    Case("CREATE TABLE a (id INT) WITH ('topic' = 'a', 'properties.bootstrap.servers' = 'one:9092');\n"
         "CREATE TABLE o (id INT) WITH ('topic' = 'o', 'properties.bootstrap.servers' = 'two:9092');\n"
         "INSERT INTO o SELECT id FROM a;", F, "kafka-cluster", 3, 13),
    Case("CREATE TABLE o (v STRING) WITH ('topic' = 'o', 'sink.partitioner' = 'fixed');\n"
         "INSERT INTO o SELECT note FROM orders;", F, "connector-option", 1, 69),
    # a table created by a query: its connector options read as a declaration's
    Case("CREATE TABLE c WITH ('connector' = 'hbase-2.2') AS SELECT note FROM orders;", F, "connector", 1, 36),
    Case("CREATE TABLE c WITH ('sink.partitioner' = 'fixed') AS SELECT note FROM orders;", F, "connector-option", 1, 43),
    Case("SELECT o.order_id, o.product_id, p.product_id FROM orders o JOIN products p ON o.product_id = p.product_id;",
         F, "duplicate-column", 1, 34),
    Case("SELECT STREAM o._key, o.item, p.paid AS item FROM orders o JOIN payments p ON o._key = p._key WITHIN 5s;",
         L, "duplicate-column", 1, 31),

]
