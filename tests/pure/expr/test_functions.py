"""Every scalar function in streamjoin.expr.functions, per dialect where dialects differ, NULL inputs
included (docs/functions.md is the reference these tests pin down)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import pytest
import sqlglot

from streamjoin.dialect.flavours import flavour
from streamjoin.expr.compile import ExpressionError, ExprOptions, Scope, compile_expr

COLUMNS = {"s": "STRING", "n": "STRING", "i": "INT", "f": "DOUBLE", "d": "DECIMAL(5,2)", "ts": "TIMESTAMP(3)",
           "xs": "ARRAY<ARRAY<INT>>", "day": "ARRAY<INT>", "night": "ARRAY<INT>"}
# 2019-03-30 05:03:30.250 UTC
ROW = {"s": "Jose.Hood@aol.com", "n": None, "i": -7, "f": -2.5, "d": Decimal("2.345"), "ts": 1_553_922_210_250,
       "xs": [[100, 80], [95, 91]], "day": [88], "night": [89, 92]}


@dataclass
class Case:
    sql: str
    expected: Any
    dialect: str = "ksqldb"


def evaluate(sql: str, dialect: str = "ksqldb") -> Any:
    scope = Scope({"t": COLUMNS}, ExprOptions.of(flavour(dialect)))
    return compile_expr(sqlglot.parse_one(sql), scope)({"t": ROW})


CASES = [
    # lengths: LEN (Lenses), LENGTH / CHAR_LENGTH (ksqlDB, Flink)
    Case("LEN(t.s)", 17), Case("length(t.s)", 17), Case("CHAR_LENGTH('')", 0), Case("LEN(t.n)", None),
    Case("CARDINALITY(t.day)", 1), Case("ARRAY_LENGTH(t.night)", 2), Case("SIZE(t.xs)", 2),
    # SUBSTRING / SUBSTR, ksqlDB & Flink & s-Server: 1-based position, optional length
    Case("SUBSTRING(t.s, 10)", "@aol.com"), Case("SUBSTR(t.s, 1, 4)", "Jose"), Case("SUBSTRING(t.s FROM 6 FOR 4)", "Hood"),
    Case("SUBSTRING(t.s, -3)", "com"), Case("SUBSTRING(t.s, 0, 2)", "Jo"), Case("SUBSTRING(t.s, 5, 0)", ""),
    Case("SUBSTRING(t.s, 30)", ""), Case("SUBSTRING(t.n, 1)", None), Case("SUBSTRING(t.s, t.n)", None),
    Case("SUBSTR(t.s, 1, 4)", "Jose", "flink"),
    # Lenses SUBSTR: zero-based start, optional exclusive end, clamped (its doc: SUBSTR(email, 10, 20))
    Case("substr(t.s, 10)", "aol.com", "lenses"), Case("substr(t.s, 10, 20)", "aol.com", "lenses"),
    Case("substr(t.s, 0, 4)", "Jose", "lenses"), Case("substr('John', 1)", "ohn", "lenses"),
    Case("substr('John', 5)", "", "lenses"), Case("substr('John', 3, 1)", "", "lenses"),
    # case and trimming
    Case("UPPER(t.s)", "JOSE.HOOD@AOL.COM"), Case("LOWER('AbC')", "abc"), Case("UCASE(t.n)", None),
    Case("TRIM('  a b  ')", "a b"), Case("LTRIM('  a ')", "a "), Case("RTRIM('  a ')", "  a"),
    Case("TRIM(BOTH 'x' FROM 'xxaxx')", "a"), Case("TRIM(LEADING 'x' FROM 'xxaxx')", "axx"), Case("TRIM(t.n)", None),
    # CONCAT: ksqlDB skips NULL arguments; Flink, Lenses, s-Server return NULL
    Case("CONCAT('a', t.i, TRUE)", "a-7true"), Case("CONCAT('a', t.n, 'b')", "ab"),
    Case("CONCAT('a', t.n, 'b')", None, "flink"), Case("concat('a', t.n)", None, "lenses"),
    Case("CONCAT('a', 'b')", "ab", "lenses"), Case("t.s || t.n", None),
    # numbers: ABS, FLOOR/CEIL keep the type, ROUND rounds halves away from zero
    Case("ABS(t.i)", 7), Case("ABS(t.f)", 2.5), Case("ABS(t.n)", None),
    Case("FLOOR(t.f)", -3.0), Case("CEIL(t.f)", -2.0), Case("CEILING(t.d)", Decimal("3")),
    Case("FLOOR(t.d)", Decimal("2")), Case("FLOOR(t.i)", -7),
    Case("ROUND(t.f)", -3.0), Case("ROUND(2.5)", Decimal("3")), Case("ROUND(t.d, 2)", Decimal("2.35")),
    Case("ROUND(t.i)", -7), Case("ROUND(1234, -2)", 1200), Case("ROUND(t.n, 1)", None),
    # NULL handling
    Case("COALESCE(t.n, t.i)", -7), Case("IFNULL(t.n, 'x')", "x"), Case("NVL(t.n, t.n)", None),
    Case("AS_VALUE(t.i)", -7), Case("AS_VALUE(t.n)", None),
    Case("NULLIF(t.i, -7)", None), Case("NULLIF(t.i, 0)", -7), Case("NULLIF(t.n, 0)", None),
    # Lenses flatten: one level, in order
    Case("flatten(t.xs)", [100, 80, 95, 91]), Case("flatten([t.day, t.night])", [88, 89, 92]),
    Case("flatten([t.day, t.n])", None), Case("flatten(t.n)", None), Case("flatten([[1, [2]], [3]])", [1, [2], 3]),
    # ksqlDB TIMESTAMPTOSTRING / STRINGTOTIMESTAMP: Java patterns, optional time zone
    Case("TIMESTAMPTOSTRING(t.ts, 'yyyy-MM-dd HH:mm:ss.SSS')", "2019-03-30 05:03:30.250"),
    Case("TIMESTAMPTOSTRING(t.ts, 'HH:mm zzz', 'Europe/London')", "05:03 GMT"),
    Case("STRINGTOTIMESTAMP('2019-03-30 05:03:30.250', 'yyyy-MM-dd HH:mm:ss.SSS')", 1_553_922_210_250),
    Case("TIMESTAMPTOSTRING(t.n, 'yyyy')", None),
    # timestamps: FLOOR/CEIL(ts TO unit) (s-Server's FLOOR(ROWTIME TO HOUR)), TO_TIMESTAMP
    Case("FLOOR(t.ts TO SECOND)", 1_553_922_210_000), Case("FLOOR(t.ts TO HOUR)", 1_553_922_000_000),
    Case("FLOOR(t.ts TO DAY)", 1_553_904_000_000), Case("FLOOR(t.ts TO MONTH)", 1_551_398_400_000),
    Case("FLOOR(t.ts TO YEAR)", 1_546_300_800_000), Case("CEIL(t.ts TO HOUR)", 1_553_925_600_000),
    Case("CEIL(t.ts TO MONTH)", 1_554_076_800_000), Case("CEIL(FLOOR(t.ts TO MINUTE) TO MINUTE)", 1_553_922_180_000),
    Case("CAST(FLOOR(t.ts TO HOUR) AS STRING)", "2019-03-30 05:00:00.000"),
    Case("TO_TIMESTAMP('2019-03-30 05:03:30.250')", 1_553_922_210_250), Case("TO_TIMESTAMP(t.n)", None),
    # Flink: Java date patterns; TO_TIMESTAMP_LTZ from epoch seconds (0) or millis (3); QUARTER
    Case("TO_TIMESTAMP('30/03/2019 05:03', 'dd/MM/yyyy HH:mm')", 1_553_922_180_000, "flink"),
    Case("TO_TIMESTAMP('2019-03-30 05:03:30.25', 'yyyy-MM-dd HH:mm:ss.SSS')", 1_553_922_210_250, "flink"),
    Case("TO_TIMESTAMP_LTZ(1553922210, 0)", 1_553_922_210_000, "flink"),
    Case("TO_TIMESTAMP_LTZ(1553922210250, 3)", 1_553_922_210_250, "flink"), Case("TO_TIMESTAMP_LTZ(t.n, 3)", None),
    Case("DATE_FORMAT(t.ts, 'yyyy-MM-dd HH:mm:ss.SSS')", "2019-03-30 05:03:30.250", "flink"),
    Case("DATE_FORMAT(t.ts, 'yy/MM/dd ''at'' HH')", "19/03/30 at 05", "flink"),
    Case("DATE_FORMAT(t.n, 'yyyy')", None, "flink"),
    Case("QUARTER(t.ts)", 1, "flink"), Case("QUARTER(TO_TIMESTAMP('2019-10-01 00:00:00'))", 4, "flink"),
    Case("QUARTER(t.n)", None, "flink"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.dialect}:{c.sql}")
def test_function(case: Case) -> None:
    result = evaluate(case.sql, case.dialect)
    assert result == case.expected and type(result) is type(case.expected), result


@pytest.mark.parametrize(
    "sql, message",
    [
        ("NO_SUCH_FUNCTION(t.s)", "unknown function NO_SUCH_FUNCTION"),
        ("CARDINALITY(t.day, 1)", r"CARDINALITY takes 1 argument\(s\), got 2"),
        ("FLOOR(t.ts TO WEEK)", "cannot floor a timestamp to WEEK"),
        ("UPPER(t.i)", "cannot evaluate `UPPER"),
        ("TO_TIMESTAMP_LTZ(t.i, 6)", "precision must be 0"),
    ],
)
def test_function_errors(sql: str, message: str) -> None:
    with pytest.raises(ExpressionError, match=message):
        evaluate(sql)
