"""What a Flink lookup table is, as the planner hands it to the runtime: a table kept in a database
(`'connector' = 'jdbc'`), read one key at a time by the tasks that join against it, with the
per-task cache its `lookup.*` options describe. Plain data, shared by the planner (which reads the
options, `plan.jdbc_options`), the lookup join operator and the task's database client."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LookupCache:
    """A task's cache of looked-up keys (Flink's PARTIAL lookup cache). `max_rows`: how many keys
    it holds at most (the least recently used goes first; None: no bound); `expire_after_write_ms`
    / `expire_after_access_ms`: how long an entry is served after it was loaded / last served
    (None: no limit); `cache_missing_key`: a key the table does not hold is remembered as missing
    too. A cache with no bound at all is no cache (`enabled`)."""

    max_rows: int | None = None
    expire_after_write_ms: int | None = None
    expire_after_access_ms: int | None = None
    cache_missing_key: bool = True

    @property
    def enabled(self) -> bool:
        return any(v is not None for v in (self.max_rows, self.expire_after_write_ms, self.expire_after_access_ms))

    def describe(self) -> str:
        if not self.enabled:
            return "no cache"
        parts = [f"max {self.max_rows} keys" if self.max_rows is not None else None,
                 f"expire {self.expire_after_write_ms} ms after write" if self.expire_after_write_ms is not None else None,
                 f"expire {self.expire_after_access_ms} ms after access" if self.expire_after_access_ms is not None else None,
                 "missing keys cached" if self.cache_missing_key else "missing keys not cached"]
        return "cache: " + ", ".join(p for p in parts if p)


@dataclass(frozen=True)
class JdbcTable:
    """A PostgreSQL table behind `'connector' = 'jdbc'`: where (host, port, database from the JDBC
    `url`), which table (`table-name`, schema-qualified or not), who (username, password), how many
    times a failed lookup is tried again (`lookup.max-retries`), and the cache."""

    url: str
    host: str
    port: int
    database: str
    table_name: str
    username: str | None = None
    password: str | None = None
    max_retries: int = 3
    cache: LookupCache = LookupCache()

    def describe(self) -> str:
        """For EXPLAIN: never the password."""
        user = f" as {self.username}" if self.username else ""
        return f"jdbc {self.url} table {self.table_name}{user}, {self.cache.describe()}"
