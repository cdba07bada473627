"""The lookup join's database client, run in the tasks (never on the driver): a `LookupSource`
(streamjoin.operators.lookup_join) reading one PostgreSQL table through psycopg, one connection
per task, opened at the task's first lookup. `PostgresConnector` is what the compiled pipeline
carries (picklable: the table's declaration, no connection).

Names are written as Flink's PostgreSQL dialect writes them, unquoted (PostgreSQL folds them to
lower case); a name that is not a plain identifier is refused rather than spliced into SQL."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping

from streamjoin.dialect.types import SqlType
from streamjoin.operators.base import Row
from streamjoin.plan.lookup_spec import JdbcTable

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*")
_CONNECT_TIMEOUT_S = 10


def _identifier(text: str, what: str) -> str:
    parts = text.split(".")
    if not all(_NAME.fullmatch(p) for p in parts):
        raise ValueError(f"{what} {text!r} is not a plain SQL name (letters, digits, _ and $; schema.table)")
    return text


@dataclass(frozen=True)
class PostgresConnector:
    """Opens a task's `PostgresLookupSource` for `table`, reading `columns` by `key_columns`."""

    table: JdbcTable
    key_columns: tuple[str, ...]
    columns: Mapping[str, SqlType | None]

    def __call__(self) -> "PostgresLookupSource":
        return PostgresLookupSource(self)


class PostgresLookupSource:
    """One connection (autocommit: each lookup sees the table as it is now) and one prepared
    statement `SELECT <columns> FROM <table> WHERE k1 = %s AND ...`."""

    def __init__(self, connector: PostgresConnector) -> None:
        import psycopg  # in the tasks only

        self._errors = (psycopg.OperationalError, psycopg.InterfaceError)
        table = connector.table
        self.names = tuple(connector.columns)
        where = " AND ".join(f"{_identifier(k, 'column')} = %s" for k in connector.key_columns)
        listed = ", ".join(_identifier(c, "column") for c in self.names)
        self.query = f"SELECT {listed} FROM {_identifier(table.table_name, 'table-name')} WHERE {where}"
        try:
            self.connection = psycopg.connect(host=table.host, port=table.port, dbname=table.database,
                                              user=table.username, password=table.password, autocommit=True,
                                              connect_timeout=_CONNECT_TIMEOUT_S, application_name="streamjoin-lookup")
        except self._errors as error:
            raise ConnectionError(f"cannot reach PostgreSQL at {table.url} as {table.username!r}: "
                                  f"{str(error).strip().splitlines()[0]}") from None

    def lookup(self, key: tuple) -> list[Row]:
        try:
            rows = self.connection.execute(self.query, key, prepare=True).fetchall()
        except self._errors as error:
            raise ConnectionError(str(error).strip().splitlines()[0]) from None
        return [{name: _value(value) for name, value in zip(self.names, row)} for row in rows]

    def close(self) -> None:
        self.connection.close()


def _value(value: Any) -> Any:
    """A database value as the runtime holds it: timestamps UTC-aware (a `timestamp` without time
    zone is read as UTC, the project's convention), the rest as psycopg gives it."""
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value
