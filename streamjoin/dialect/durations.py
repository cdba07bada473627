"""Durations as the dialects write them, read into milliseconds by one reader for the planner
and the expression compiler: join windows (`WITHIN 10 SECONDS`, Lenses `5s`) and day-time
INTERVAL literals (`INTERVAL '4' HOUR`, `INTERVAL '2 hours'`, `INTERVAL '-1' MINUTE`).
Anything unreadable is a DurationError whose message says what to write instead."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlglot import exp

# Day-time units of an INTERVAL (singular; plurals are folded by `unit_name`).
UNIT_MILLIS = {
    "MILLISECOND": 1,
    "SECOND": 1000,
    "MINUTE": 60_000,
    "HOUR": 3_600_000,
    "DAY": 86_400_000,
    "WEEK": 7 * 86_400_000,
}
CALENDAR_UNITS = ("MONTH", "YEAR")  # no fixed length: not a duration
# Units of a join window: ksqlDB's words and Lenses' letters (`WITHIN 5s`).
WINDOW_UNITS = {
    "MILLISECOND": 1, "MILLISECONDS": 1, "MS": 1,
    "SECOND": 1000, "SECONDS": 1000, "S": 1000,
    "MINUTE": 60_000, "MINUTES": 60_000, "M": 60_000,
    "HOUR": 3_600_000, "HOURS": 3_600_000, "H": 3_600_000,
    "DAY": 86_400_000, "DAYS": 86_400_000, "D": 86_400_000,
}
MAX_MILLIS = 2**63 - 1  # times and windows are 64-bit milliseconds downstream


class DurationError(ValueError):
    """A duration that cannot be read, or that does not fit 64-bit milliseconds."""


def unit_name(unit: str) -> str:
    """'hours' / 'HOUR' / 'Seconds' -> the singular upper-case unit name."""
    name = unit.upper()
    if name not in UNIT_MILLIS and name not in CALENDAR_UNITS and name.endswith("S"):
        name = name[:-1]
    return name


def to_millis(amount: str, unit_ms: int, written: str) -> int:
    """`amount` (a decimal number as text) units of `unit_ms` milliseconds, range-checked."""
    try:
        millis = int(Decimal(amount) * unit_ms)
    except (InvalidOperation, ValueError):
        raise DurationError(f"{amount!r} in {written} is not a number: write e.g. INTERVAL '4' HOUR") from None
    if abs(millis) > MAX_MILLIS:
        raise DurationError(f"{written} is longer than the longest duration (about 292 million years "
                            "in milliseconds): write a smaller amount")
    return millis


def interval_millis(node: exp.Interval) -> int:
    """A day-time INTERVAL literal -> milliseconds (negative amounts allowed)."""
    written = node.sql()
    amount, unit = node.this, node.unit
    if isinstance(amount, exp.Literal):
        text = amount.name
    elif isinstance(amount, exp.Neg) and isinstance(amount.this, exp.Literal):
        text = "-" + amount.this.name
    else:
        raise DurationError(f"{written} needs a literal amount: write e.g. INTERVAL '4' HOUR")
    if unit is None and len(text.split()) == 2:  # INTERVAL '2 hours'
        text, unit_text = text.split()
    elif isinstance(unit, (exp.Var, exp.Identifier)):
        unit_text = unit.name
    else:
        raise DurationError(f"{written} has no unit: write e.g. INTERVAL '{text}' SECOND")
    name = unit_name(unit_text)
    if name not in UNIT_MILLIS:
        raise DurationError(f"{written}: {unit_text} is not a day-time unit; use one of "
                            f"{', '.join(UNIT_MILLIS)}")
    return to_millis(text, UNIT_MILLIS[name], written)
