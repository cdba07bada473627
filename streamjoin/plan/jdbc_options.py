"""Flink's JDBC connector options of a lookup table, read and checked: `'connector' = 'jdbc'` names
a PostgreSQL table that Flink's lookup join reads one key at a time (`JOIN t FOR SYSTEM_TIME AS OF
o.proc_time`), with a per-task cache.

- `'url'` (`jdbc:postgresql://host[:port]/database`; another database is a positioned error),
  `'table-name'`, `'username'`, `'password'`;
- the cache, old style: `'lookup.cache.max-rows'` with `'lookup.cache.ttl'` (Flink caches only
  when both are given; the TTL counts from the load), `'lookup.cache.caching-missing-key'`;
  new style: `'lookup.cache' = 'PARTIAL'` (or `'NONE'`) with `'lookup.partial-cache.max-rows'`,
  `'lookup.partial-cache.expire-after-write'`, `'lookup.partial-cache.expire-after-access'`,
  `'lookup.partial-cache.cache-missing-key'`; `'lookup.max-retries'`;
- what would make the table something else (a scanned source, a sink: `scan.*`, `sink.*`) or
  another system's driver (`'driver'` other than PostgreSQL's) is a positioned error."""

from __future__ import annotations

import re

from streamjoin.plan.hints import duration_ms
from streamjoin.plan.kafka_keys import Properties
from streamjoin.plan.lookup_spec import JdbcTable, LookupCache
from streamjoin.plan.scope import Context

_URL = re.compile(r"jdbc:postgresql://(?P<host>[^:/?]+)(?::(?P<port>\d+))?/(?P<database>[^?/]+)(?:\?.*)?$", re.I)
_KNOWN = {"connector", "url", "table-name", "username", "password", "driver", "lookup.max-retries",
          "lookup.cache", "lookup.cache.max-rows", "lookup.cache.ttl", "lookup.cache.caching-missing-key",
          "lookup.partial-cache.max-rows", "lookup.partial-cache.expire-after-write",
          "lookup.partial-cache.expire-after-access", "lookup.partial-cache.cache-missing-key"}
_POSTGRES_DRIVER = "org.postgresql.Driver"


def jdbc_table(ctx: Context, props: Properties, names, where) -> JdbcTable:
    """The lookup table a `'connector' = 'jdbc'` declaration names."""
    for name in names:
        if name not in _KNOWN:
            raise ctx.error("connector-option", f"{name!r} is not an option of a JDBC lookup table: a JDBC table "
                            "is read by lookup joins only (JOIN it FOR SYSTEM_TIME AS OF a PROCTIME() attribute), "
                            f"with the options {', '.join(sorted(_KNOWN))}", props.written(name) or where)
    url = props.get("url")
    table_name = props.get("table-name")
    if url is None or table_name is None:
        missing = "'url'" if url is None else "'table-name'"
        raise ctx.error("connector-option", f"a JDBC table needs {missing}: 'url' = 'jdbc:postgresql://host:5432/db', "
                        "'table-name' = '...'", where)
    match = _URL.match(url)
    if match is None:
        raise ctx.error("connector-option", f"'url' = {url!r}: the JDBC lookup reads PostgreSQL, "
                        "'jdbc:postgresql://host[:port]/database'", props.written("url"))
    driver = props.get("driver")
    if driver is not None and driver != _POSTGRES_DRIVER:
        raise ctx.error("connector-option", f"'driver' = {driver!r}: the JDBC lookup reads PostgreSQL "
                        f"('{_POSTGRES_DRIVER}')", props.written("driver"))
    return JdbcTable(url, match["host"], int(match["port"] or 5432), match["database"], table_name,
                     props.get("username"), props.get("password"),
                     _count(ctx, props, "lookup.max-retries", 0) if props.get("lookup.max-retries") else 3,
                     _cache(ctx, props))


def _cache(ctx: Context, props: Properties) -> LookupCache:
    mode = (props.get("lookup.cache") or "").upper()
    if mode not in ("", "NONE", "PARTIAL"):
        raise ctx.error("connector-option", f"'lookup.cache' is 'NONE' or 'PARTIAL' (a FULL cache, reloading the "
                        f"whole table, is not supported), not {props.get('lookup.cache')!r}", props.written("lookup.cache"))
    if mode == "PARTIAL":
        cache = LookupCache(_count(ctx, props, "lookup.partial-cache.max-rows", 1),
                            _duration(ctx, props, "lookup.partial-cache.expire-after-write"),
                            _duration(ctx, props, "lookup.partial-cache.expire-after-access"),
                            _flag(props, "lookup.partial-cache.cache-missing-key"))
        if not cache.enabled:
            raise ctx.error("connector-option", "'lookup.cache' = 'PARTIAL' needs a bound: "
                            "'lookup.partial-cache.max-rows' or an 'expire-after-write' / 'expire-after-access'",
                            props.written("lookup.cache"))
        return cache
    rows, ttl = _count(ctx, props, "lookup.cache.max-rows", 1), _duration(ctx, props, "lookup.cache.ttl")
    if rows is None or ttl is None:  # Flink caches only when both are given
        return LookupCache()
    return LookupCache(rows, ttl, None, _flag(props, "lookup.cache.caching-missing-key"))


def _count(ctx: Context, props: Properties, name: str, least: int) -> int | None:
    text = props.get(name)
    if text is None:
        return None
    if not re.fullmatch(r"\d+", text) or int(text) < least:
        raise ctx.error("connector-option", f"{name!r} is a whole number, {least} or more, not {text!r}",
                        props.written(name))
    return int(text)


def _duration(ctx: Context, props: Properties, name: str) -> int | None:
    text = props.get(name)
    if text is None:
        return None
    millis = duration_ms(text)
    if millis is None:
        raise ctx.error("connector-option", f"{name!r} is a duration such as '10s', '1 min' or '600000 ms', not "
                        f"{text!r}", props.written(name))
    return millis


def _flag(props: Properties, name: str) -> bool:
    """A cache-missing-key option: true unless written false."""
    return (props.get(name) or "true").lower() in ("true", "1", "yes")
