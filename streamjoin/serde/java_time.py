"""Java `DateTimeFormatter` patterns, as ksqlDB's TIMESTAMP_FORMAT property and its
TIMESTAMPTOSTRING / STRINGTOTIMESTAMP functions take them ('yyyy-MM-dd HH:mm:ss.SSS zzz'), for
formatting epoch milliseconds and parsing text, in a time zone (default UTC).

Supported letters: y/u (year), M (month: MM, MMM, MMMM), d, D (day of year), E (day name), H, h,
k, K, m, s, S (fraction), a (AM/PM), z (zone name), Z, X and x (offsets); 'text' is a literal
and '' a quote. Anything else is rejected when the pattern is compiled."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from typing import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from streamjoin.serde.time import datetime_to_millis, millis_to_datetime

_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
           "October", "November", "December"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
_TOKEN = re.compile(r"'(?:[^']|'')*'|([A-Za-z])\1*|.", re.S)


def zone(name: str | None):
    """A time zone by id ('Europe/London', 'UTC', '+02:00'); ValueError when unknown."""
    if not name or name.upper() in ("UTC", "Z", "GMT"):
        return timezone.utc
    match = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2}):?(\d{2})?", name.strip())
    if match:
        sign = -1 if match.group(1) == "-" else 1
        return timezone(sign * timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0)))
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r}") from None


def _offset(moment: datetime, colon: bool, z_for_zero: bool) -> str:
    delta = moment.utcoffset() or timedelta(0)
    if z_for_zero and not delta:
        return "Z"
    minutes = int(delta.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    hours, minutes = divmod(abs(minutes), 60)
    return f"{sign}{hours:02d}{':' if colon else ''}{minutes:02d}"


def _field(letter: str, count: int) -> tuple[Callable[[datetime], str], str]:
    """(formatter, regex with one named group) of one pattern letter run."""
    n = count
    numbers = {"d": "day", "H": "hour", "m": "minute", "s": "second", "D": "yday", "k": "hour24", "K": "hour12",
               "h": "hour12"}
    if letter in "yu":
        if n == 2:
            return (lambda t: f"{t.year % 100:02d}"), r"(?P<year2>\d{2})"
        return (lambda t: f"{t.year:0{n}d}"), r"(?P<year>\d{4,})"
    if letter == "M":
        if n >= 4:
            return (lambda t: _MONTHS[t.month - 1]), "(?P<monthname>" + "|".join(_MONTHS) + ")"
        if n == 3:
            return (lambda t: _MONTHS[t.month - 1][:3]), "(?P<monthabbr>" + "|".join(m[:3] for m in _MONTHS) + ")"
        return (lambda t: f"{t.month:0{n}d}"), rf"(?P<month>\d{{{n},2}})"
    if letter == "E":
        if n >= 4:
            return (lambda t: _DAYS[t.weekday()]), "(?:" + "|".join(_DAYS) + ")"
        return (lambda t: _DAYS[t.weekday()][:3]), "(?:" + "|".join(d[:3] for d in _DAYS) + ")"
    if letter == "S":
        return (lambda t: f"{t.microsecond:06d}"[:n].ljust(n, "0")), rf"(?P<fraction>\d{{{n}}})"
    if letter == "a":
        return (lambda t: "AM" if t.hour < 12 else "PM"), "(?P<ampm>AM|PM|am|pm)"
    if letter == "z":
        return (lambda t: t.tzname() or "UTC"), r"(?:[A-Za-z][A-Za-z0-9/_+-]*)"
    if letter in "XxZ":
        colon = (letter in "Xx" and n >= 3) or (letter == "Z" and n == 5)
        return (lambda t: _offset(t, colon, letter == "X")), r"(?P<offset>Z|[+-]\d{2}(?::?\d{2})?)"
    if letter in numbers:
        value = {"d": lambda t: t.day, "H": lambda t: t.hour, "m": lambda t: t.minute, "s": lambda t: t.second,
                 "D": lambda t: t.timetuple().tm_yday, "k": lambda t: t.hour or 24,
                 "K": lambda t: t.hour % 12, "h": lambda t: t.hour % 12 or 12}[letter]
        return (lambda t: f"{value(t):0{n}d}"), rf"(?P<{numbers[letter]}>\d{{{n},{max(n, 3 if letter == 'D' else 2)}}})"
    raise ValueError(f"pattern letter {letter!r} is not supported")


@lru_cache(maxsize=256)
def _compile(pattern: str) -> tuple[list[Callable[[datetime], str]], re.Pattern]:
    formatters: list[Callable[[datetime], str]] = []
    regex = []
    for match in _TOKEN.finditer(pattern):
        token = match.group(0)
        if token.startswith("'"):
            text = token[1:-1].replace("''", "'") if len(token) > 1 else ""
            text = text or ("'" if token == "''" else "")
            formatters.append(lambda t, text=text: text)
            regex.append(re.escape(text))
        elif match.group(1):
            formatter, expression = _field(match.group(1), len(token))
            formatters.append(formatter)
            regex.append(expression)
        else:
            formatters.append(lambda t, text=token: text)
            regex.append(re.escape(token))
    return formatters, re.compile("".join(regex))


def format_millis(millis: int, pattern: str, zone_name: str | None = None) -> str:
    """Epoch milliseconds as text in `pattern`, in the time zone `zone_name` (default UTC)."""
    moment = millis_to_datetime(millis).astimezone(zone(zone_name))
    formatters, _ = _compile(pattern)
    return "".join(f(moment) for f in formatters)


def parse_millis(text: str, pattern: str, zone_name: str | None = None) -> int:
    """Text in `pattern` -> epoch milliseconds (an offset in the text wins over `zone_name`)."""
    _, regex = _compile(pattern)
    match = regex.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"{text!r} does not match the pattern {pattern!r}")
    g = {k: v for k, v in match.groupdict().items() if v is not None}
    year = int(g["year"]) if "year" in g else 2000 + int(g["year2"]) if "year2" in g else 1970
    if "monthname" in g or "monthabbr" in g:
        month = next(i for i, m in enumerate(_MONTHS, 1) if m.startswith(g.get("monthname") or g["monthabbr"]))
    else:
        month = int(g.get("month", 1))
    hour = int(g.get("hour", g.get("hour24", 0))) % 24
    if "hour12" in g:
        hour = int(g["hour12"]) % 12 + (12 if g.get("ampm", "AM").upper() == "PM" else 0)
    fraction = g.get("fraction", "0")
    moment = datetime(year, month, int(g.get("day", 1)), hour, int(g.get("minute", 0)), int(g.get("second", 0)),
                      int((fraction + "000000")[:6]))
    if "yday" in g:
        moment = moment.replace(month=1, day=1) + timedelta(days=int(g["yday"]) - 1)
    offset = g.get("offset")
    if offset:
        tz = timezone.utc if offset == "Z" else zone(offset)
        return datetime_to_millis(moment.replace(tzinfo=tz))
    return datetime_to_millis(moment.replace(tzinfo=zone(zone_name)))
