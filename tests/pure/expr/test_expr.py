"""compile_expr: SQL NULL semantics, arithmetic, casts, timestamps, scope resolution, errors, and
the seeds' join conditions evaluated on the seeds' data."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any

import pytest
import sqlglot

from streamjoin.dialect import StreamJoin
from streamjoin.dialect.flavours import flavour
from streamjoin.expr.compile import ExpressionError, ExprOptions, Scope, compile_expr, compile_predicate

# One relation `t` with a few typed columns; rows default to ROW below.
T_SCOPE = Scope({"t": {"a": "INT", "b": "INT", "s": "STRING", "n": "INT", "ts": "TIMESTAMP(3)", "d": "DECIMAL(10,2)"}})
ROW = {"a": 7, "b": 2, "s": "John", "n": None, "ts": 36_000_000, "d": Decimal("1.25")}


@dataclass
class Case:
    sql: str
    expected: Any
    row: dict = field(default_factory=lambda: ROW)


def evaluate(case: Case, scope: Scope = T_SCOPE) -> Any:
    return compile_expr(sqlglot.parse_one(case.sql), scope)({"t": case.row})


def check(case: Case) -> None:
    result = evaluate(case)
    assert result == case.expected and type(result) is type(case.expected), (case.sql, result)


NULL_SEMANTICS = [
    # Kleene logic: NULL is "unknown"; FALSE dominates AND, TRUE dominates OR.
    Case("NULL AND FALSE", False), Case("FALSE AND NULL", False), Case("NULL AND TRUE", None),
    Case("TRUE AND TRUE", True), Case("NULL OR TRUE", True), Case("TRUE OR NULL", True),
    Case("NULL OR FALSE", None), Case("FALSE OR FALSE", False), Case("NOT NULL", None),
    Case("NOT FALSE", True),
    # comparisons and arithmetic with NULL are NULL, whatever the operator
    Case("t.n = 1", None), Case("t.n <> 1", None), Case("t.n = t.n", None), Case("t.n < 1", None),
    Case("t.n + 1", None), Case("1 - t.n", None), Case("t.n * 0", None), Case("-t.n", None),
    Case("t.s || t.n", None),
    # IS never yields NULL
    Case("t.n IS NULL", True), Case("t.n IS NOT NULL", False), Case("t.a IS NULL", False),
    Case("(t.n = 1) IS NULL", True), Case("(t.a = 7) IS TRUE", True), Case("(t.n = 1) IS NOT FALSE", True),
    Case("t.n IS NOT DISTINCT FROM NULL", True), Case("t.a IS DISTINCT FROM t.n", True),
    # IN: NULL subject -> NULL; no match but a NULL candidate -> NULL
    Case("t.n IN (1, 2)", None), Case("t.a IN (1, 7)", True), Case("t.a IN (1, 2)", False),
    Case("t.a IN (1, t.n)", None), Case("t.a IN (7, t.n)", True), Case("t.a NOT IN (1, t.n)", None),
    # BETWEEN: a NULL bound only matters when the other bound does not already fail
    Case("t.a BETWEEN 1 AND t.n", None), Case("t.a BETWEEN 8 AND t.n", False),
    Case("t.n BETWEEN 1 AND 2", None), Case("t.a BETWEEN 7 AND 7", True),
    Case("t.n LIKE 'J%'", None),
    # CASE: a NULL condition is not TRUE; simple CASE never matches a NULL subject
    Case("CASE WHEN t.n = 1 THEN 'x' ELSE 'y' END", "y"), Case("CASE WHEN t.n = 1 THEN 'x' END", None),
    Case("CASE t.n WHEN NULL THEN 'x' ELSE 'y' END", "y"), Case("CASE t.a WHEN 7 THEN 'x' END", "x"),
    Case("COALESCE(t.n, t.n, 3)", 3), Case("IFNULL(t.n, 'z')", "z"), Case("NULLIF(t.a, 7)", None),
    Case("NULLIF(t.a, 1)", 7), Case("IF(t.n = 1, 'x', 'y')", "y"),
]


@pytest.mark.parametrize("case", NULL_SEMANTICS, ids=lambda c: c.sql)
def test_null_semantics(case: Case) -> None:
    check(case)


ARITHMETIC = [
    Case("t.a / t.b", 3), Case("-7 / 2", -3), Case("t.a % t.b", 1), Case("-7 % 2", -1),
    Case("t.a / 0", None), Case("t.a % 0", None),  # division by zero is NULL, the query lives on
    Case("t.a * 1.5", Decimal("10.5")), Case("t.d * 2", Decimal("2.50")),
    Case("t.d + 0.5e0", 1.75), Case("1e1 / 4", 2.5), Case("t.a + t.b * 2", 11),
    Case("(t.a + t.b) * 2", 18), Case("'a' || 'b' || 1", "ab1"), Case("t.s || TRUE", "Johntrue"),
]


@pytest.mark.parametrize("case", ARITHMETIC, ids=lambda c: c.sql)
def test_arithmetic_keeps_integer_and_decimal_types(case: Case) -> None:
    check(case)


CASTS = [
    Case("CAST(t.a AS STRING)", "7"), Case("CAST(t.a AS VARCHAR)", "7"), Case("CAST(TRUE AS STRING)", "true"),
    Case("CAST(t.d AS STRING)", "1.25"), Case("CAST('42' AS INT)", 42), Case("CAST(' 42 ' AS INTEGER)", 42),
    Case("CAST(t.a AS BIGINT)", 7), Case("CAST(-2.7 AS INT)", -2), Case("CAST(t.a AS DOUBLE)", 7.0),
    Case("CAST('1.005' AS DECIMAL(5,2))", Decimal("1.01")), Case("CAST(t.a AS DECIMAL(4,1))", Decimal("7.0")),
    Case("CAST('TRUE' AS BOOLEAN)", True), Case("CAST('no' AS BOOLEAN)", False), Case("CAST(0 AS BOOLEAN)", False),
    Case("CAST('2019-03-30 05:03:30.000' AS TIMESTAMP)", 1_553_922_210_000),
    Case("CAST('1970-01-01T00:00:01Z' AS TIMESTAMP)", 1000), Case("CAST(t.ts AS STRING)", "1970-01-01 10:00:00.000"),
    Case("CAST(CAST('2019-03-30 05:03:30.5' AS TIMESTAMP) AS VARCHAR)", "2019-03-30 05:03:30.500"),
    Case("CAST(t.n AS INT)", None), Case("TRY_CAST('x' AS INT)", None),
]


@pytest.mark.parametrize("case", CASTS, ids=lambda c: c.sql)
def test_casts(case: Case) -> None:
    check(case)


BAD_CASTS = [("CAST('x' AS INT)", "cannot cast 'x' to INT"),
             ("CAST('123.4' AS DECIMAL(3,1))", r"overflows DECIMAL\(3,1\)"),
             ("CAST('maybe' AS BOOLEAN)", "is not a boolean"), ("CAST('noon' AS TIMESTAMP)", "is not a timestamp")]


@dataclass
class CastFailure:
    flavour: str
    null: bool  # the failed CAST is NULL (else an error naming the value and the expression)


CAST_FAILURES = [CastFailure("ksqldb", True), CastFailure("flink", False), CastFailure("lenses", False),
                 CastFailure("sqlstream", False)]


@pytest.mark.parametrize("sql, message", BAD_CASTS)
@pytest.mark.parametrize("case", CAST_FAILURES, ids=lambda c: c.flavour)
def test_a_failed_cast_follows_the_flavour(case: CastFailure, sql: str, message: str) -> None:
    """ksqlDB documents CAST of an unconvertible value as NULL; elsewhere it is an error (the
    runtime dead-letters the record); TRY_CAST is NULL everywhere."""
    scope = Scope(T_SCOPE.relations, ExprOptions.of(flavour(case.flavour)))
    assert evaluate(Case("TRY_" + sql, None), scope) is None
    if case.null:
        assert evaluate(Case(sql, None), scope) is None
        return
    with pytest.raises(ExpressionError, match=message) as error:
        evaluate(Case(sql, None), scope)
    assert f"in `{sql.split(' AS ')[0]}" in str(error.value)


TIMES = [
    # t.ts = 10:00 on 1970-01-01 (36 000 000 ms); timestamps are epoch millis throughout
    Case("t.ts - INTERVAL '4' HOUR", 21_600_000), Case("t.ts + INTERVAL '90' SECOND", 36_090_000),
    Case("INTERVAL '1' DAY + t.ts", 122_400_000), Case("t.ts - INTERVAL '1.5' SECONDS", 35_998_500),
    Case("t.ts > '1970-01-01 09:59:59.999'", True), Case("t.ts = '1970-01-01 10:00:00'", True),
    Case("t.ts BETWEEN '1970-01-01 09:00:00' AND '1970-01-01 10:00:00'", True),
    Case("t.ts IN ('1970-01-01 10:00:00', '1970-01-01 11:00:00')", True),
    Case("FLOOR((t.ts - INTERVAL '1' MINUTE) TO HOUR)", 32_400_000), Case("CEIL(t.ts + 1 TO HOUR)", 39_600_000),
    # decoders may hand over datetimes or text: a TIMESTAMP column always reads as millis
    Case("t.ts", 36_000_000, {"ts": datetime(1970, 1, 1, 10, tzinfo=timezone.utc)}),
    Case("t.ts", 36_000_000, {"ts": "1970-01-01 10:00:00.000"}),
]


@pytest.mark.parametrize("case", TIMES, ids=lambda c: c.sql)
def test_timestamps_and_intervals(case: Case) -> None:
    check(case)


def test_flink_interval_join_condition_on_the_seed_timeline() -> None:
    # Orders o (id, ordertime) and Shipments s (orderId, shiptime); BETWEEN includes both bounds.
    scope = Scope({"o": {"id": "INT", "ordertime": "TIMESTAMP(3)"},
                   "s": {"shipmentId": "STRING", "orderId": "INT", "shiptime": "TIMESTAMP(3)"}})
    on = compile_predicate(sqlglot.parse_one(
        "o.id = s.orderId AND o.ordertime BETWEEN s.shiptime - INTERVAL '4' HOUR AND s.shiptime"), scope)
    orders = {1: "1970-01-01 10:00:00.000", 2: "1970-01-01 09:00:00.000", 3: "1970-01-01 12:00:00.000"}
    shipments = [("s3", 3, "1970-01-01 11:00:00.000"), ("s1", 1, "1970-01-01 13:00:00.000"),
                 ("s2", 2, "1970-01-01 13:30:00.000"), ("s4", 1, "1970-01-01 14:00:00.000")]
    joined = [
        (order_id, shipment_id)
        for order_id, ordertime in orders.items()
        for shipment_id, target, shiptime in shipments
        if on({"o": {"id": order_id, "ordertime": ordertime},
               "s": {"shipmentId": shipment_id, "orderId": target, "shiptime": shiptime}})
    ]
    # s3 (11:00) precedes order 3 (12:00); s2 (13:30) is 4.5 h after order 2; s4 is exactly 4 h.
    assert joined == [(1, "s1"), (1, "s4")]


# Lenses seed data: customers (_key, id, name) and orders (_key, customer_id, item).
CUSTOMERS = [{"_key": 1, "id": 1, "name": "John"}, {"_key": 2, "id": 2, "name": "Frank"}]
ORDERS = [{"_key": 1, "customer_id": 1, "item": "Computer"}, {"_key": 2, "customer_id": 1, "item": "Mouse"},
          {"_key": 3, "customer_id": 3, "item": "Keyboard"}]
LENSES = Scope({"customersTable": ["_key", "id", "name"], "ordersStream": ["_key", "customer_id", "item"]},
               ExprOptions.of(flavour("lenses")))


@pytest.mark.parametrize(
    "condition, expected_pairs",
    [
        ("customersTable.id = ordersStream.customer_id", [("John", "Computer"), ("John", "Mouse")]),
        ("customersTable.id - 1 = ordersStream.customer_id - 1", [("John", "Computer"), ("John", "Mouse")]),
        ("substr(customersTable.name, 5) = ordersStream.item", []),
        ("len(customersTable.name) > 10", []),
        ('substr(customersTable.name,1) = "J"', []),  # zero-based: 'ohn' / 'rank', never "J"
        ("len(customersTable.name) > 10 OR customersTable._key > 1",
         [("Frank", "Computer"), ("Frank", "Mouse"), ("Frank", "Keyboard")]),
        ("customersTable._key = ordersStream.customer_id AND len(customersTable.name) > 10", []),
        ("substr(customersTable.name, 5) = ordersStream.item AND (len(customersTable.name) > 10 OR customersTable._key > 1)", []),
        ("customersTable._key = ordersStream.customer_id AND substr(customersTable.name, 0, 1) = \"J\"",
         [("John", "Computer"), ("John", "Mouse")]),
    ],
)
def test_lenses_on_conditions_on_the_seed_data(condition: str, expected_pairs: list) -> None:
    on = compile_predicate(sqlglot.parse_one(condition), LENSES)
    pairs = [(c["name"], o["item"]) for c in CUSTOMERS for o in ORDERS if on({"customersTable": c, "ordersStream": o})]
    assert sorted(pairs) == sorted(expected_pairs)


def test_double_quoted_name_is_a_string_only_when_asked() -> None:
    strict_scope = Scope(LENSES.relations, replace(LENSES.options, double_quoted_strings=False))
    with pytest.raises(ExpressionError, match="unknown column 'J'"):
        compile_expr(sqlglot.parse_one('customersTable.name = "J"'), strict_scope)
    # a double-quoted name that does resolve stays a column reference
    same = compile_expr(sqlglot.parse_one('customersTable.name = "name"'), LENSES)
    assert same({"customersTable": CUSTOMERS[0], "ordersStream": ORDERS[0]}) is True


ENV = {"l": {"ID": 1, "V": "A", "ROWTIME": 3000, "_key": "k1"},
       "r": {"id": 1, "W": None, "ROWTIME": datetime(1970, 1, 1, 0, 0, 4, tzinfo=timezone.utc), "_key": "k2"}}
SCOPE = Scope({"l": ["ID", "V"], "r": ["id", "W"], "stocks.order_quantity": ["ticker", "info", "tags"]},
              ExprOptions.of(flavour("sqlstream")))  # ROWTIME a TIMESTAMP


@pytest.mark.parametrize(
    "sql, env, expected",
    [
        ("l.id = r.ID", ENV, True),          # ksqlDB upper-cases, Flink keeps case: match ignoring case
        ("v", ENV, "A"),                      # unqualified, only in l
        ("L.v", ENV, "A"),                    # alias case-insensitive too
        ("r.w IS NULL", ENV, True),
        ("l.ROWTIME", ENV, 3000),
        ("r.rowtime", ENV, 4000),             # datetime rowtime read as millis
        ("ROWTIME", ENV, 4000),               # unqualified across relations: the later (s-Server)
        ("l._key", ENV, "k1"),
        ("r._value", ENV, {"id": 1, "W": None}),
        ("r.id", {**ENV, "r": None}, None),   # null-padded by an outer join
        ("ROWTIME", {**ENV, "r": None}, 3000),
        ("stocks.order_quantity.ticker", {"stocks.order_quantity": {"ticker": "IBM"}}, "IBM"),
        ("stocks.order_quantity.info.price", {"stocks.order_quantity": {"info": {"Price": 200}}}, 200),
        ("info.price", {"stocks.order_quantity": {"info": {"price": 200}}}, 200),
        ("tags[1]", {"stocks.order_quantity": {"tags": ["a", "b"]}}, "a"),
        ("tags[-1]", {"stocks.order_quantity": {"tags": ["a", "b"]}}, "b"),
        ("tags[3]", {"stocks.order_quantity": {"tags": ["a", "b"]}}, None),
        ("tags[0]", {"stocks.order_quantity": {"tags": ["a", "b"]}}, None),
        ("info->Price", {"stocks.order_quantity": {"info": {"Price": 200}}}, 200),
        ("stocks.order_quantity.info->a->b", {"stocks.order_quantity": {"info": {"a": {"b": 1}}}}, 1),
        ("info['k']", {"stocks.order_quantity": {"info": {"k": 5}}}, 5),
        ("[1, 2][2]", {}, 2),
        ("ARRAY[l.id, 3]", ENV, [1, 3]),
    ],
)
def test_column_resolution(sql: str, env: dict, expected: Any) -> None:
    # the streaming dialect: ksqlDB's `->` is a struct field, not a JSON extraction
    assert compile_expr(sqlglot.parse_one(sql, dialect=StreamJoin()), SCOPE)(env) == expected


def test_zero_based_subscripts_on_request() -> None:
    scope = Scope({"t": ["xs"]}, ExprOptions(array_index_base=0))
    assert compile_expr(sqlglot.parse_one("t.xs[0]"), scope)({"t": {"xs": [9, 8]}}) == 9


@pytest.mark.parametrize(
    "sql, message",
    [
        ("SELECT 1 FROM x WHERE\n  l.v = r.nope", r"unknown column 'nope' in r \(columns: id, W\) in `r.nope` \(line 2, col 9\)"),
        ("SELECT 1 FROM x WHERE id = 1", r"column 'id' is ambiguous: it is in l, r in `id` \(line 1, col 23\)"),
        ("SELECT 1 FROM x WHERE zz > 1", r"unknown column 'zz' \(relations: l, r, stocks.order_quantity\)"),
        ("SELECT 1 FROM x WHERE _key = 1", "_key is ambiguous: qualify it"),
        ("SELECT 1 FROM x WHERE customer.name = 1", r"unknown relation or column 'customer' in customer.name"),
        ("SELECT 1 FROM x WHERE nosuch(l.v) = 1", r"unknown function nosuch: .* in `NOSUCH\(l.v\)`"),
        ("SELECT 1 FROM x WHERE l.v = INTERVAL '1' HOUR", "only allowed added to or subtracted"),
        ("SELECT 1 FROM x WHERE l.v > l.v - INTERVAL '1' MONTH", "MONTH is not a day-time unit"),
    ],
)
def test_compile_errors_name_the_column_expression_and_position(sql: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        compile_expr(sqlglot.parse_one(sql).args["where"].this, SCOPE)


def test_runtime_errors_name_the_expression() -> None:
    add = compile_expr(sqlglot.parse_one("l.v + 1"), SCOPE)
    with pytest.raises(ExpressionError, match=r"cannot evaluate `l.v \+ 1` \(line 1, col 1\): can only concatenate str"):
        add(ENV)
    with pytest.raises(ExpressionError, match="the environment has no relation 'r'"):
        compile_expr(sqlglot.parse_one("r.id"), SCOPE)({"l": ENV["l"]})


@pytest.mark.parametrize(
    "sql, expected",
    [("t.s LIKE 'J%'", True), ("t.s LIKE 'j%'", False), ("t.s ILIKE 'j%'", True), ("t.s LIKE 'J_hn'", True),
     ("t.s LIKE '%oh%'", True), ("t.s NOT LIKE 'J%'", False), ("'50%' LIKE '50!%' ESCAPE '!'", True),
     ("'501' LIKE '50!%' ESCAPE '!'", False), ("'a.c' LIKE 'a.c'", True), ("'abc' LIKE 'a.c'", False),
     ("t.s LIKE t.s", True)],
)
def test_like(sql: str, expected: bool) -> None:
    check(Case(sql, expected))


def test_compiled_once_evaluated_many_times() -> None:
    condition = compile_predicate(sqlglot.parse_one("t.a > 3 AND t.s LIKE 'J%'"), T_SCOPE)
    assert [condition({"t": {**ROW, "a": a}}) for a in range(2, 7)] == [False, False, True, True, True]
    assert condition({"t": None}) is False  # NULL rejects like FALSE in a predicate
