"""SQL values in Python: timestamps, intervals, numbers, casts.

Representation (the one convention every evaluator follows):
- TIMESTAMP: int epoch milliseconds, UTC. Values arriving as `datetime` (naive = UTC) or as
  'YYYY-MM-DD HH:MM:SS.fff' strings in TIMESTAMP-typed columns are converted on read, so a
  timestamp always compares and subtracts as an int.
- INTERVAL (day-time only): int milliseconds, folded at compile time.
- DECIMAL: `decimal.Decimal`; INT/BIGINT: int; DOUBLE: float; BOOLEAN: bool; STRING: str;
  ARRAY: list; STRUCT/MAP: Mapping.
"""

from __future__ import annotations

import math
from datetime import date, datetime, timedelta
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any, Callable, Mapping

from sqlglot import exp

from streamjoin.dialect import durations
from streamjoin.dialect.durations import UNIT_MILLIS, DurationError, unit_name
from streamjoin.dialect.types import TypeSyntaxError, check_decimal
from streamjoin.expr.core import ExpressionError
from streamjoin.serde.time import EPOCH, datetime_to_millis, format_timestamp, parse_timestamp


# ---- timestamps ---------------------------------------------------------------------------


def to_millis(value: Any) -> int:
    """Any accepted TIMESTAMP representation -> epoch millis."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, datetime):
        return datetime_to_millis(value)
    if isinstance(value, date):
        return datetime_to_millis(datetime(value.year, value.month, value.day))
    if isinstance(value, str):
        return parse_timestamp(value)
    if isinstance(value, (float, Decimal)):
        return int(value)
    raise TypeError(f"{value!r} is not a timestamp")


def floor_timestamp(millis: int, unit: str) -> int:
    """FLOOR(ts TO unit): the start of the unit-long period holding `millis` (UTC)."""
    name = unit_name(unit)
    if name in UNIT_MILLIS and name != "WEEK":
        return millis - millis % UNIT_MILLIS[name]
    moment = EPOCH + timedelta(milliseconds=millis)
    if name == "MONTH":
        return datetime_to_millis(datetime(moment.year, moment.month, 1))
    if name == "YEAR":
        return datetime_to_millis(datetime(moment.year, 1, 1))
    raise ValueError(f"cannot floor a timestamp to {unit}")


def ceil_timestamp(millis: int, unit: str) -> int:
    floor = floor_timestamp(millis, unit)
    if floor == millis:
        return millis
    name = unit_name(unit)
    if name in UNIT_MILLIS:
        return floor + UNIT_MILLIS[name]
    start = EPOCH + timedelta(milliseconds=floor)
    if name == "MONTH":
        year, month = divmod(start.month, 12)
        return datetime_to_millis(datetime(start.year + year, month + 1, 1))
    return datetime_to_millis(datetime(start.year + 1, 1, 1))


def interval_millis(node: exp.Interval) -> int:
    """A day-time INTERVAL literal ('4' HOUR, 10 SECONDS, '1.5' SECOND, '2 hours') -> millis.
    Month/year intervals have no fixed length and are rejected."""
    try:
        return durations.interval_millis(node)
    except DurationError as error:
        raise ExpressionError(str(error), node, rule="interval") from None


# ---- numbers ------------------------------------------------------------------------------


def aligned(a: Any, b: Any) -> tuple[Any, Any]:
    """Operands of one Python type where SQL would widen: DECIMAL op DOUBLE -> DOUBLE,
    datetime -> millis. Equal types (the common case) pass through untouched."""
    if type(a) is type(b):
        return a, b
    if isinstance(a, datetime) or isinstance(b, datetime):
        return to_millis(a), to_millis(b)
    if isinstance(a, float) and isinstance(b, Decimal):
        return a, float(b)
    if isinstance(a, Decimal) and isinstance(b, float):
        return float(a), b
    return a, b


def add(a: Any, b: Any) -> Any:
    a, b = aligned(a, b)
    return a + b


def subtract(a: Any, b: Any) -> Any:
    a, b = aligned(a, b)
    return a - b


def multiply(a: Any, b: Any) -> Any:
    a, b = aligned(a, b)
    return a * b


def divide(a: Any, b: Any) -> Any:
    """INT / INT truncates toward zero (ksqlDB, Flink, s-Server); division by zero is NULL
    (ksqlDB's choice: one bad row must not stop a streaming query)."""
    a, b = aligned(a, b)
    if b == 0:
        return None
    if isinstance(a, int) and isinstance(b, int):
        quotient = abs(a) // abs(b)
        return quotient if (a < 0) == (b < 0) else -quotient
    return a / b


def modulo(a: Any, b: Any) -> Any:
    """The result takes the dividend's sign, as in SQL (Python's % takes the divisor's)."""
    a, b = aligned(a, b)
    if b == 0:
        return None
    if isinstance(a, int) and isinstance(b, int):
        return a - b * divide(a, b)
    if isinstance(a, float) or isinstance(b, float):
        return math.fmod(a, b)
    return a % b  # Decimal % already follows the dividend


def round_half_up(value: Any, digits: int = 0) -> Any:
    """SQL ROUND: halves away from zero (Python's round() rounds halves to even)."""
    if isinstance(value, int) and digits >= 0:
        return value
    rounded = Decimal(str(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)
    if isinstance(value, float):
        return float(rounded)
    if isinstance(value, int):
        return int(rounded)
    return rounded


def floor_number(value: Any) -> Any:
    if isinstance(value, float):
        return float(math.floor(value))
    if isinstance(value, Decimal):
        return value.to_integral_value(rounding=ROUND_FLOOR)
    return value


def ceil_number(value: Any) -> Any:
    return -floor_number(-value)


def struct_field(value: Any, field: str) -> Any:
    """Struct field access `value.field`: the exact name first, then ignoring case."""
    if not isinstance(value, Mapping):
        raise TypeError(f"cannot read field {field!r} of non-struct value {value!r}")
    if field in value:
        return value[field]
    folded = field.casefold()
    return next((v for k, v in value.items() if str(k).casefold() == folded), None)


# ---- strings and casts --------------------------------------------------------------------


def to_sql_string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return format_timestamp(datetime_to_millis(value))
    return str(value)


TRUE_WORDS = {"true", "t", "yes", "y", "1"}
FALSE_WORDS = {"false", "f", "no", "n", "0"}


def to_boolean(value: Any) -> bool:
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS or word in FALSE_WORDS:
            return word in TRUE_WORDS
        raise ValueError(f"{value!r} is not a boolean")
    return bool(value)


def to_integer(value: Any) -> int:
    """Numbers truncate toward zero; strings must spell an integer."""
    if isinstance(value, str):
        return int(value.strip())
    if isinstance(value, datetime):
        return datetime_to_millis(value)
    return int(value)


def to_decimal(precision: int | None, scale: int | None) -> Callable[[Any], Decimal]:
    quantum = Decimal(1).scaleb(-scale) if scale is not None else None
    limit = Decimal(10) ** (precision - (scale or 0)) if precision is not None else None

    def convert(value: Any) -> Decimal:
        number = Decimal(value.strip() if isinstance(value, str) else str(value))
        if quantum is not None:
            number = number.quantize(quantum, rounding=ROUND_HALF_UP)
        if limit is not None and abs(number) >= limit:
            raise ValueError(f"{value!r} overflows DECIMAL({precision},{scale or 0})")
        return number

    return convert


STRING_TYPES = {"TEXT", "VARCHAR", "CHAR", "NVARCHAR", "NCHAR", "BPCHAR", "LONGTEXT", "MEDIUMTEXT"}
INTEGER_TYPES = {"INT", "BIGINT", "SMALLINT", "TINYINT", "MEDIUMINT", "UINT", "UBIGINT"}
FLOAT_TYPES = {"DOUBLE", "FLOAT", "UDOUBLE"}
DECIMAL_TYPES = {"DECIMAL", "BIGDECIMAL", "UDECIMAL", "DECIMAL32", "DECIMAL64", "DECIMAL128"}


def is_timestamp_type(name: str | None) -> bool:
    """A CAST target's sqlglot type name (TIMESTAMP, TIMESTAMPLTZ, DATETIME ...) names a timestamp.
    Declared column types are `SqlType`s: they answer `.is_timestamp` themselves."""
    upper = (name or "").upper()
    return upper.startswith("TIMESTAMP") or upper.startswith("DATETIME")


def cast_function(to: exp.DataType, from_timestamp: bool, node: exp.Expression) -> Callable[[Any], Any]:
    """The conversion CAST(x AS to) applies to a non-NULL x; `from_timestamp` tells a TIMESTAMP
    operand (an int of millis) from a plain number, so CAST(ts AS STRING) prints a timestamp."""
    name = to.this.name
    if name in STRING_TYPES:
        if from_timestamp:
            return lambda v: format_timestamp(to_millis(v))
        return to_sql_string
    if name in INTEGER_TYPES:
        return to_integer
    if name in FLOAT_TYPES:
        return float
    if name in DECIMAL_TYPES:
        params = [int(p.this.name) for p in to.expressions]
        if params:
            try:
                check_decimal(*params[:2])
            except TypeSyntaxError as error:
                raise ExpressionError(str(error), to, rule="cast-type") from None
        return to_decimal(*(params + [None, None])[:2])
    if name == "BOOLEAN":
        return to_boolean
    if is_timestamp_type(name):
        return to_millis
    if name == "DATE":
        return lambda v: floor_timestamp(to_millis(v), "DAY")
    raise ExpressionError(f"unsupported CAST target {to.sql()}: CAST to STRING, INT, BIGINT, DOUBLE, "
                          "DECIMAL(p, s), BOOLEAN, TIMESTAMP or DATE", node, rule="cast-type")
