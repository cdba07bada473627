"""The seed documents' statements pasted as written into a `sql/` folder (issue 39): each plans
with the meaning its document gives, or fails with a positioned error where the system rejects
it. `shown`: lines the EXPLAIN must hold; `rule`, `line`, `col`: where a rejection points."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from streamjoin.app.project import load_project
from streamjoin.dialect import StreamJoinError

SOURCES = {
    "lenses": """-- dialect: lenses
CREATE TABLE customers (_key INT PRIMARY KEY, id INT, name STRING)
  WITH (kafka_topic='customers', value_format='JSON', partitions=1);
CREATE STREAM orders (_key INT KEY, customer_id INT, item STRING)
  WITH (kafka_topic='orders', value_format='JSON', partitions=1);
""",
    "sqlstream": """-- dialect: sqlstream
CREATE STREAM beast_events (row_id INTEGER NOT NULL, sensor INTEGER, zone INTEGER, animal_id INT, weight INTEGER);
CREATE TABLE animal_data (animal_id INT NOT NULL PRIMARY KEY, edible BOOLEAN, poisonous BOOLEAN,
  name VARCHAR(32) NOT NULL, species VARCHAR(32) NOT NULL, genus VARCHAR(32) NOT NULL);
CREATE STREAM bids (ticker VARCHAR(8), price INTEGER);
CREATE STREAM asks (ticker VARCHAR(8), price INTEGER);
CREATE STREAM city_sales (city VARCHAR(20), amount INTEGER);
CREATE TABLE city_info (city VARCHAR(20) PRIMARY KEY, manager VARCHAR(20));
""",
}


@dataclass(frozen=True)
class Planned:
    flavour: str
    sql: str
    shown: tuple[str, ...]


@dataclass(frozen=True)
class Rejected:
    flavour: str
    sql: str
    rule: str
    line: int
    col: int


PLANNED = {
    # Lenses: SELECT TABLE reads both topics as tables, whatever sources.sql declares ...
    "lenses SELECT TABLE reads a declared stream as a table": Planned(
        "lenses", "SELECT TABLE *\nFROM customers JOIN orders;",
        ("TableTableJoin INNER", "Source orders AS orders  table")),
    # ... and the windowed SELECT STREAM over the same topics reads both as streams; the
    # document writes WITHIN 5s twice (after the joined source and after ON): one window
    "lenses SELECT STREAM reads a declared table as a stream, WITHIN twice": Planned(
        "lenses", "SELECT STREAM\n     customers.name\n    , orders.item\nFROM\n    customers LEFT JOIN orders WITHIN 5s\n"
                  "        ON customers.id = orders.customer_id\nWITHIN 5s;",
        ("StreamStreamJoin LEFT", "within before 5s after 5s", "Source customers AS customers  stream")),
    "lenses a view keeps its own kind": Planned(
        "lenses", "WITH customersTable AS (SELECT TABLE * FROM customers);\n"
                  "SELECT STREAM customersTable.name, orders.item FROM orders JOIN customersTable "
                  "ON customersTable.id = orders.customer_id;",
        ("StreamTableJoin INNER",)),
    # an ON of one-table predicates filters the join on _key (the join without ON)
    "lenses one-table ON joins on _key": Planned(
        "lenses", "SELECT TABLE customers.name, orders.item FROM customers JOIN orders ON len(customers.name) > 10;",
        ("on customers._key = orders._key", "residual LENGTH(customers.name) > 10")),
    # s-Server: SELECT STREAM * names a repeated column <NAME>0, <NAME>1 (the document calls it valid)
    "sqlstream SELECT STREAM * over an ON join": Planned(
        "sqlstream", "SELECT STREAM * from beast_events e join animal_data a   "
                     "on (e.animal_id = a.animal_id and a.edible and not a.poisonous);",
        ("ANIMAL_ID=e.ANIMAL_ID", "ANIMAL_ID0=a.ANIMAL_ID", "NAME=a.NAME")),
    "sqlstream three-way SELECT STREAM *": Planned(
        "sqlstream", "SELECT STREAM * from bids over (range interval '1' hour preceding) as b1\n"
                     "join asks over (range interval '2' second preceding)\non b1.\"ticker\" = asks.\"ticker\"\n"
                     "join bids over (range interval '3' minute preceding) as b2\non b2.\"ticker\" = asks.\"ticker\";",
        ("TICKER=b1.TICKER, PRICE=b1.PRICE, TICKER0=asks.TICKER, PRICE0=asks.PRICE, TICKER1=b2.TICKER, "
         "PRICE1=b2.PRICE",)),
    "sqlstream USING lists the column once": Planned(
        "sqlstream", "SELECT STREAM * from beast_events e join animal_data a using (animal_id);",
        ("value ANIMAL_ID=e.ANIMAL_ID, ROW_ID=e.ROW_ID",)),
}

REJECTED = {
    "lenses two different WITHINs": Rejected(
        "lenses", "SELECT STREAM customers.name FROM customers JOIN orders WITHIN 5s\n"
                  "  ON customers.id = orders.customer_id WITHIN 10s;", "within-repeated", 2, 40),
    # s-Server's hourly window (the rows of the current hour) is rejected, never read as 0 ms
    "sqlstream OVER (ORDER BY FLOOR(ROWTIME TO HOUR))": Rejected(
        "sqlstream", "SELECT STREAM cs.*, ci.*\nFROM city_sales OVER (ORDER BY FLOOR(ROWTIME TO HOUR)\n"
                     "                      RANGE CURRENT ROW) AS cs\nRIGHT OUTER JOIN city_info AS ci\nUSING(city);",
        "window-order-by", 2, 38),
    "sqlstream named window with PARTITION BY": Rejected(
        "sqlstream", "SELECT STREAM b.ticker FROM bids OVER w AS b JOIN asks ON b.ticker = asks.ticker\n"
                     "WINDOW w AS (PARTITION BY ticker RANGE INTERVAL '1' MINUTE PRECEDING);", "window-order-by", 2, 27),
    "sqlstream ORDER BY another column": Rejected(
        "sqlstream", "SELECT STREAM b.ticker FROM bids OVER (ORDER BY price ROWS 2 PRECEDING) AS b JOIN asks "
                     "ON b.ticker = asks.ticker;", "window-order-by", 1, 49),
    "lenses SELECT TABLE of an unkeyed stream": Rejected(
        "lenses", "SELECT TABLE * FROM customers JOIN events;", "table-primary-key", 1, 36),
}


def _project(root: Path, flavour: str, sql: str) -> Path:
    folder = root / flavour
    folder.mkdir()
    extra = "CREATE STREAM events (id INT) WITH (kafka_topic='events', value_format='JSON');\n"
    (folder / "sources.sql").write_text(SOURCES[flavour] + (extra if flavour == "lenses" else ""))
    (folder / "q.sql").write_text(sql)
    return folder / "q.sql"


@pytest.mark.parametrize("name", PLANNED)
def test_seed_statement_plans_with_its_meaning(name: str, tmp_path: Path):
    case = PLANNED[name]
    _project(tmp_path, case.flavour, case.sql)
    (query,) = load_project(tmp_path).queries
    for line in case.shown:
        assert line in query.explain, query.explain


@pytest.mark.parametrize("name", REJECTED)
def test_seed_statement_is_rejected_where_it_points(name: str, tmp_path: Path):
    case = REJECTED[name]
    path = _project(tmp_path, case.flavour, case.sql)
    with pytest.raises(StreamJoinError) as caught:
        load_project(tmp_path)
    error = caught.value
    assert (error.rule, error.file, error.line, error.col) == (case.rule, str(path), case.line, case.col), str(error)
