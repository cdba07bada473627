"""The one timestamp convention: instants are UTC; expressions carry them as epoch milliseconds
(`int`), decoded rows as timezone-aware `datetime`s; text is 'YYYY-MM-DD HH:MM:SS.fff' (ISO 8601
with 'T', 'Z' or an offset is read too; text without an offset is UTC)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
ONE_MS = timedelta(milliseconds=1)


def millis_to_datetime(ms: int) -> datetime:
    return EPOCH + timedelta(milliseconds=ms)


def datetime_to_millis(value: datetime) -> int:
    """Epoch milliseconds of a datetime; a naive datetime is taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return (value - EPOCH) // ONE_MS


def parse_timestamp_text(text: str) -> datetime:
    """Timestamp text -> an aware UTC datetime; ValueError when it is not one."""
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a timestamp (expected 'YYYY-MM-DD HH:MM:SS.fff')") from None
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=timezone.utc)
    return parsed.astimezone(timezone.utc)


def parse_timestamp(text: str) -> int:
    """Timestamp text -> epoch milliseconds; ValueError when it is not one."""
    return datetime_to_millis(parse_timestamp_text(text))


def format_timestamp(value: datetime | int, precision: int = 3) -> str:
    """The text form, UTC: '1970-01-01 09:00:00.000' (`precision` fraction digits, 0..6)."""
    instant = millis_to_datetime(value) if isinstance(value, int) else value
    if instant.tzinfo is None:
        instant = instant.replace(tzinfo=timezone.utc)
    text = instant.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    digits = min(max(precision, 0), 6)
    return text + (f".{instant.microsecond:06d}"[: digits + 1] if digits else "")
