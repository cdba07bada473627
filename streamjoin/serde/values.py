"""Type-directed conversion of one column value: JSON values and DELIMITED text <-> Python values.

Converters are built once per `SqlType` (closures), then called per record: the type switch is
not repeated for every value. Decoded Python values by type:

    STRING str | BYTES bytes | BOOLEAN bool | TINYINT..BIGINT int | FLOAT, DOUBLE float
    DECIMAL(p, s) decimal.Decimal quantized to s (exact: JSON numbers are parsed as Decimal)
    TIMESTAMP, TIMESTAMP_LTZ datetime in UTC (tz-aware)   ARRAY list | MAP dict | STRUCT dict

Reading is lenient the way ksqlDB's JSON deserializer is (a numeric string for an INT, a number
for a STRING); anything that does not convert raises DecodeError naming the column path.
Timestamps are read from "YYYY-MM-DD HH:MM:SS[.fff]" (UTC unless an offset is given, ISO 'T'
accepted) or epoch milliseconds, and written as "YYYY-MM-DD HH:MM:SS.fff" UTC text.
"""

from __future__ import annotations

import base64
import json
import math
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from json.encoder import encode_basestring_ascii as json_string  # json.dumps of a str, without its checks
from typing import Any, Callable

from streamjoin.dialect.types import INTEGER_RANGES, SqlType, parse_type
from streamjoin.serde.time import format_timestamp, millis_to_datetime, parse_timestamp_text


Reader = Callable[[Any, str], Any]  # (raw value, column path for messages) -> Python value
Writer = Callable[[Any], str]  # Python value (not None) -> JSON or DELIMITED text


class DecodeError(ValueError):
    """A record that cannot be decoded with its declared format; `reason` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class EncodeError(ValueError):
    """A row that cannot be written with the sink's format: a value out of its SQL type's range,
    or of the wrong kind for it. The row goes to the dead letters."""


BIGINT = parse_type("BIGINT")


def integer_bounds(t: SqlType) -> tuple[int, int]:
    bits = INTEGER_RANGES[t.name]
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def _fail(path: str, raw: Any, t: SqlType, why: str = "") -> DecodeError:
    shown = repr(raw) if len(repr(raw)) <= 60 else repr(raw)[:57] + "..."
    where = f"column {path}: " if path else ""
    return DecodeError(f"{where}cannot read {shown} as {t}" + (f" ({why})" if why else ""))


# ---- timestamps ---------------------------------------------------------------------------------

def _read_timestamp(raw: Any, path: str, t: SqlType) -> datetime:
    if isinstance(raw, bool):
        raise _fail(path, raw, t)
    if isinstance(raw, (int, Decimal)) and raw == int(raw):
        return millis_to_datetime(int(raw))
    if isinstance(raw, str):
        if raw.strip().lstrip("-").isdigit():
            return millis_to_datetime(int(raw))
        try:
            return parse_timestamp_text(raw)
        except ValueError:
            raise _fail(path, raw, t, "expected 'YYYY-MM-DD HH:MM:SS.fff' or epoch millis") from None
    raise _fail(path, raw, t)


def _write_timestamp(t: SqlType) -> Writer:
    """Writes a datetime, epoch millis, or timestamp text (as conformance inputs hold them)."""
    def write(value: Any) -> str:
        if isinstance(value, datetime):
            return format_timestamp(value, t.precision)
        if isinstance(value, str):
            try:
                return format_timestamp(_read_timestamp(value, "", t), t.precision)
            except DecodeError as e:
                raise EncodeError(e.reason) from None
        return format_timestamp(int(value), t.precision)
    return write


# ---- scalars ------------------------------------------------------------------------------------

def _read_integer(t: SqlType) -> Reader:
    low, high = integer_bounds(t)

    def read(raw: Any, path: str) -> int:
        if type(raw) is int and low <= raw <= high:  # the common case, without a Decimal
            return raw
        if isinstance(raw, bool):
            raise _fail(path, raw, t)
        try:
            number = Decimal(raw.strip()) if isinstance(raw, str) else Decimal(raw)
        except (InvalidOperation, TypeError, ValueError):
            raise _fail(path, raw, t) from None
        if not number.is_finite() or number != number.to_integral_value():
            raise _fail(path, raw, t, "not an integer")
        if not low <= number <= high:
            raise _fail(path, raw, t, "out of range")
        return int(number)
    return read


def _read_float(t: SqlType) -> Reader:
    def read(raw: Any, path: str) -> float:
        if type(raw) is float:
            return raw
        if isinstance(raw, bool):
            raise _fail(path, raw, t)
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise _fail(path, raw, t) from None
    return read


def _read_decimal(t: SqlType) -> Reader:
    quantum = Decimal(1).scaleb(-t.scale)

    def read(raw: Any, path: str) -> Decimal:
        if isinstance(raw, bool):
            raise _fail(path, raw, t)
        if isinstance(raw, float):
            raw = repr(raw)  # the shortest text keeps 11.11 exact
        try:
            number = Decimal(raw.strip() if isinstance(raw, str) else raw).quantize(quantum, ROUND_HALF_UP)
        except (InvalidOperation, TypeError, ValueError):
            raise _fail(path, raw, t) from None
        if len(number.as_tuple().digits) > t.precision and number != 0:
            raise _fail(path, raw, t, f"more than {t.precision} digits")
        return number
    return read


def _read_boolean(raw: Any, path: str, t: SqlType) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.strip().lower() in ("true", "false"):
        return raw.strip().lower() == "true"
    raise _fail(path, raw, t)


def _read_bytes(raw: Any, path: str, t: SqlType) -> bytes:
    if isinstance(raw, (bytes, bytearray)):
        return bytes(raw)
    try:
        return base64.b64decode(raw, validate=True)
    except (TypeError, ValueError):
        raise _fail(path, raw, t, "expected base64") from None


_SCALAR_READERS: dict[str, Callable[[Any, str, SqlType], Any]] = {
    "BOOLEAN": _read_boolean, "BYTES": _read_bytes,
    "TIMESTAMP": _read_timestamp, "TIMESTAMP_LTZ": _read_timestamp,
}


def _plain_json(raw: Any) -> Any:
    """A parsed JSON value as json.loads gives it (numbers with a fraction as float)."""
    if isinstance(raw, Decimal):
        return float(raw)
    if isinstance(raw, list):
        return [_plain_json(v) for v in raw]
    if isinstance(raw, dict):
        return {k: _plain_json(v) for k, v in raw.items()}
    return raw


def any_json_text(value: Any) -> str:
    """JSON text of a Python value of a type known only at run time (an ANY column)."""
    if value is None or isinstance(value, (bool, str)):
        return json.dumps(value)
    if isinstance(value, int):  # integer arithmetic is BIGINT: past its range is an overflow
        return str(checked_integer(BIGINT, value))
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, datetime):
        return json.dumps(format_timestamp(value))
    if isinstance(value, (bytes, bytearray)):
        return json.dumps(base64.b64encode(bytes(value)).decode("ascii"))
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(any_json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{any_json_text(v)}" for k, v in value.items()) + "}"
    if hasattr(value, "item"):  # a numpy scalar from a pandas frame
        return any_json_text(value.item())
    raise EncodeError(f"cannot write {type(value).__name__} {value!r} as JSON")


def json_text(value: Any) -> str:
    """Compact JSON text of a JSON-compatible value (Decimals written exactly)."""
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, list):
        return "[" + ",".join(json_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(str(k))}:{json_text(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def _float_text(value: Any) -> str:
    number = float(value)
    if not math.isfinite(number):
        raise EncodeError(f"{number} has no JSON or DELIMITED form")
    return repr(number)


# ---- per-type factories -------------------------------------------------------------------------

def json_reader(t: SqlType) -> Reader:
    """A reader from a parsed JSON value (json.loads with parse_float=Decimal) to `t`."""
    inner = _json_reader_not_null(t)

    def read(raw: Any, path: str) -> Any:
        return None if raw is None else inner(raw, path)
    return read


def _json_reader_not_null(t: SqlType) -> Reader:
    if t.name == "ANY":
        return lambda raw, path: _plain_json(raw)
    if t.name in INTEGER_RANGES:
        return _read_integer(t)
    if t.name in ("FLOAT", "DOUBLE"):
        return _read_float(t)
    if t.name == "DECIMAL":
        return _read_decimal(t)
    if t.name == "STRING":  # ksqlDB reads any JSON value into a STRING column as its JSON text
        return lambda raw, path: raw if type(raw) is str else json_text(raw)
    if t.name in _SCALAR_READERS:
        scalar = _SCALAR_READERS[t.name]
        return lambda raw, path: scalar(raw, path, t)
    if t.name == "ARRAY":
        element = json_reader(t.elements[0])

        def read_array(raw: Any, path: str) -> list:
            if not isinstance(raw, list):
                raise _fail(path, raw, t, "expected a JSON array")
            return [element(v, f"{path}[{i}]") for i, v in enumerate(raw)]
        return read_array
    if t.name == "MAP":
        key, value = json_reader(t.elements[0]), json_reader(t.elements[1])

        def read_map(raw: Any, path: str) -> dict:
            if not isinstance(raw, dict):
                raise _fail(path, raw, t, "expected a JSON object")
            return {key(k, f"{path} key"): value(v, f"{path}[{k!r}]") for k, v in raw.items()}
        return read_map
    return struct_reader(t.fields, t)


def struct_reader(fields: tuple[tuple[str, SqlType], ...], t: SqlType | None = None,
                  path: str | None = None) -> Reader:
    """Reads a JSON object into {field: value}: names match case-insensitively (as ksqlDB does),
    a missing field is NULL, extra fields are ignored. Also used for whole JSON record values,
    with the `path` every call passes (the side): the fields' paths are then built once."""
    readers = [(name, name.lower(), read_field, field_path) for name, read_field, field_path in field_readers(fields, path)]

    def read(raw: Any, path: str) -> dict:
        if type(raw) is not dict:
            where = f"column {path}" if t is not None else path  # a STRUCT column, or a whole value
            raise DecodeError(f"{where}: expected a JSON object, got {type(raw).__name__} {json_text(raw)[:40]}")
        out = {}
        lowered = None  # built only when a name is not spelled exactly as declared
        for name, low, read_field, field_path in readers:
            field = raw.get(name, ABSENT)
            if field is ABSENT:
                if lowered is None:
                    lowered = {str(k).lower(): v for k, v in raw.items()}
                field = lowered.get(low)
            out[name] = None if field is None else read_field(field, field_path or f"{path}.{name}")
        return out
    return read


ABSENT = object()  # a field a JSON object lacks (no JSON value is it)


def field_readers(fields: tuple[tuple[str, SqlType], ...], path: str | None) -> list[tuple[str, Reader, str | None]]:
    """(name, reader of a value that is not None, the field's path under `path`) per field."""
    return [(name, _json_reader_not_null(ft), path and f"{path}.{name}") for name, ft in fields]


def json_writer(t: SqlType) -> Writer:
    """A writer from a Python value (not None) of type `t` to JSON text."""
    if t.name == "ANY":
        return any_json_text
    if t.name in INTEGER_RANGES:
        return _integer_writer(t)
    if t.name in ("FLOAT", "DOUBLE"):
        return _float_text
    if t.name == "DECIMAL":
        quantum, limit = Decimal(1).scaleb(-t.scale), Decimal(10) ** (t.precision - t.scale)

        def write_decimal(v: Any) -> str:  # with the declared scale, as ksqlDB writes it
            exact = (Decimal(repr(v)) if isinstance(v, float) else Decimal(v)).quantize(quantum, ROUND_HALF_UP)
            if abs(exact) >= limit:
                raise EncodeError(f"{exact} does not fit {t}")
            return format(exact, "f")
        return write_decimal
    if t.name == "BOOLEAN":
        return lambda v: "true" if v else "false"
    if t.name == "STRING":
        return lambda v: json_string(str(v))
    if t.name == "BYTES":
        return lambda v: json.dumps(base64.b64encode(bytes(v)).decode("ascii"))
    if t.is_timestamp:
        write_ts = _write_timestamp(t)
        return lambda v: json.dumps(write_ts(v))
    if t.name == "ARRAY":
        element = _nullable(json_writer(t.elements[0]))
        return lambda v: "[" + ",".join(element(x) for x in v) + "]"
    if t.name == "MAP":
        key_text, value = text_writer(t.elements[0]), _nullable(json_writer(t.elements[1]))  # keys: text
        return lambda v: "{" + ",".join(f"{json.dumps(key_text(k))}:{value(x)}" for k, x in dict(v).items()) + "}"
    return struct_writer(t.fields)


def _integer_writer(t: SqlType) -> Writer:
    """`checked_integer` with the type's bounds worked out once."""
    low, high = integer_bounds(t)

    def write(value: Any) -> str:
        number = int(value)
        if not low <= number <= high:
            raise EncodeError(f"{number} is out of range for {t}")
        return str(number)
    return write


def checked_integer(t: SqlType, value: Any) -> int:
    """`value` as an int of `t`; EncodeError when it is outside the type's range (a BIGINT that
    overflowed would otherwise reach Kafka and then fail the Delta write)."""
    number = int(value)
    low, high = integer_bounds(t)
    if not low <= number <= high:
        raise EncodeError(f"{number} is out of range for {t}")
    return number


def struct_writer(fields: tuple[tuple[str, SqlType], ...], what: str = "column") -> Writer:
    """A JSON object writer; `what` names the fields in errors (a row's "value column")."""
    writers = [(name, json.dumps(name) + ":", json_writer(ft)) for name, ft in fields]

    def write(row: Any) -> str:
        parts = []
        for name, quoted, write_field in writers:
            try:
                value = row[name]
                parts.append(quoted + ("null" if value is None else write_field(value)))
            except KeyError:
                raise EncodeError(f"row has no {what} {name!r}; it has {sorted(row)}") from None
        return "{" + ",".join(parts) + "}"
    return write


def struct_columns_writer(fields: tuple[tuple[str, SqlType], ...]) -> Callable[[list[list[Any]]], list[str]]:
    """The JSON objects of rows given as one list of values per field, in `fields` order."""
    template = "{" + ",".join(json.dumps(name).replace("%", "%%") + ":%s" for name, _ in fields) + "}"
    writers = [_column_writer(ft) for _, ft in fields]

    def write_columns(columns: list[list[Any]]) -> list[str]:
        texts = [write(column) for column, write in zip(columns, writers)]
        return [template % parts for parts in zip(*texts)]
    return write_columns


def _column_writer(t: SqlType) -> Callable[[list[Any]], list[str]]:
    """`json_writer(t)` over a column of values ("null" for None), the commonest values (a str
    of a STRING, an int in an integer type's range) written inline, without a call each."""
    write = json_writer(t)
    if t.name == "STRING":
        return lambda column: [json_string(v) if type(v) is str else "null" if v is None else write(v) for v in column]
    if t.name in INTEGER_RANGES:
        low, high = integer_bounds(t)
        return lambda column: [str(v) if type(v) is int and low <= v <= high else "null" if v is None else write(v)
                               for v in column]
    return lambda column: ["null" if v is None else write(v) for v in column]


def _nullable(write: Writer) -> Writer:
    return lambda v: "null" if v is None else write(v)


def text_reader(t: SqlType) -> Reader:
    """A reader from a non-empty DELIMITED field to `t` (scalars only)."""
    if t.is_nested:
        raise ValueError(f"DELIMITED does not support {t} (no ARRAY, MAP or STRUCT)")
    if t.name == "ANY":
        return lambda text, path: text
    return _json_reader_not_null(t)  # the JSON readers accept text for every scalar type


def text_writer(t: SqlType) -> Callable[[Any], str]:
    """A writer from a Python value (not None) to its DELIMITED / map-key text."""
    if t.is_nested:
        raise ValueError(f"DELIMITED does not support {t} (no ARRAY, MAP or STRUCT)")
    if t.name == "STRING":
        return str
    if t.name == "ANY":
        return lambda v: v if isinstance(v, str) else any_json_text(v)
    if t.name == "BYTES":
        return lambda v: base64.b64encode(bytes(v)).decode("ascii")
    if t.is_timestamp:
        return _write_timestamp(t)
    return json_writer(t)  # numbers and booleans: the same text as JSON


class FrozenList(list):
    """A decoded ARRAY that can be (part of) a key: hashed by its items. Still a list to every
    reader and writer; never changed once decoded."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))


class FrozenDict(dict):
    """A decoded MAP or STRUCT that can be (part of) a key: hashed by its entries."""

    __slots__ = ()

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(frozenset(self.items()))


def hashable(value: Any) -> Any:
    """`value` with every list and dict in it made hashable, for a key (join, table, group)."""
    if isinstance(value, list):
        return FrozenList(hashable(item) for item in value)
    if isinstance(value, dict):
        return FrozenDict((name, hashable(item)) for name, item in value.items())
    if type(value) is tuple and any(isinstance(item, (list, dict)) for item in value):  # a key of such parts
        return tuple(hashable(item) for item in value)
    return value
