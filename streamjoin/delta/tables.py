"""Delta Lake output through delta-rs (`deltalake`), called from foreachBatch; no Delta jar needed.

`DeltaSink.write_batch(data, batch_id)` is exactly-once per (table, app_id): every commit carries
the app transaction (app_id, batch_id), and a batch whose id is not above the table's recorded
`transaction_version(app_id)` is skipped. delta-rs stores the transaction but does not enforce
it, hence the check. Timeline of a replay after a crash between commit and checkpoint:

    batch 7 -> commit v12 with txn(app, 7) -> crash -> Spark replays batch 7
            -> transaction_version(app) == 7 >= 7 -> skipped: no new version, no duplicate rows

Modes:
  append  streams: every row is appended as given (a `__tombstone` column, if any, is kept).
  merge   tables: MERGE on `key_columns`. A row whose boolean column `__tombstone` is true
          deletes the key (its other columns are ignored); other rows upsert
          (`when_matched_update_all` / `when_not_matched_insert_all`). Within one batch the last
          row per key (in frame order) wins, as the changelog's final state. `__tombstone` is
          not stored in a merged table; a frame without it is all upserts.
Reading never uses `spark.read.parquet` on a Delta folder (it is not Delta-aware: it also reads
files a later commit removed): `read_delta` goes deltalake -> Arrow -> spark.createDataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from deltalake import CommitProperties, DeltaTable, Transaction, write_deltalake

TOMBSTONE = "__tombstone"
_ROW = "__row"


def to_arrow(data: Any) -> pa.Table:
    """A Spark DataFrame (toArrow), an Arrow table or record batch, as an Arrow table."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    return data.toArrow()


def _quoted(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _last_per_key(table: pa.Table, key_columns: list[str]) -> pa.Table:
    """Keep the last row of each key, in frame order (the changelog's final state)."""
    numbered = table.append_column(_ROW, pa.array(range(table.num_rows), pa.int64()))
    last = numbered.group_by(key_columns, use_threads=False).aggregate([(_ROW, "max")])
    keep = pc.is_in(numbered.column(_ROW), value_set=last.column(f"{_ROW}_max"))
    return numbered.filter(keep).drop_columns([_ROW])


@dataclass
class DeltaSink:
    """One Delta table written batch by batch; see the module docstring for the algorithm."""

    path: str
    mode: str = "append"
    key_columns: list[str] = field(default_factory=list)
    app_id: str = "streamjoin"
    storage_options: dict[str, str] | None = None

    def __post_init__(self) -> None:
        self.path = str(self.path)
        if self.mode not in ("append", "merge"):
            raise ValueError(f"DeltaSink mode must be 'append' or 'merge', not {self.mode!r}")
        if self.mode == "merge" and not self.key_columns:
            raise ValueError("a MERGE DeltaSink needs key_columns")

    def _table(self) -> DeltaTable | None:
        if not DeltaTable.is_deltatable(self.path, storage_options=self.storage_options):
            return None
        return DeltaTable(self.path, storage_options=self.storage_options)

    def schema(self) -> pa.Schema | None:
        """The table's Arrow schema, or None before its first commit."""
        table = self._table()
        return None if table is None else pa.schema(table.schema().to_arrow())

    def committed_batch(self) -> int | None:
        """The last batch id committed by this app_id, or None."""
        table = self._table()
        return None if table is None else table.transaction_version(self.app_id)

    def write_batch(self, data: Any, batch_id: int) -> int | None:
        """Write one micro-batch; return the new table version, or None when nothing was committed
        (the batch was already committed, or it is empty)."""
        committed = self.committed_batch()
        if committed is not None and committed >= batch_id:
            return None
        rows = to_arrow(data)
        if rows.num_rows == 0:
            return None
        commit = CommitProperties(app_transactions=[Transaction(self.app_id, batch_id)])
        table = self._table()
        if self.mode == "append":
            write_deltalake(self.path, rows, mode="append", commit_properties=commit,
                            storage_options=self.storage_options)
        else:
            self._merge(table, rows, commit)
        return DeltaTable(self.path, storage_options=self.storage_options).version()

    def _merge(self, table: DeltaTable | None, rows: pa.Table, commit: CommitProperties) -> None:
        missing = [k for k in self.key_columns if k not in rows.column_names]
        if missing:
            raise ValueError(f"MERGE key columns {missing} are not in the batch columns {rows.column_names}")
        latest = _last_per_key(rows, self.key_columns)
        if TOMBSTONE not in latest.column_names:
            latest = latest.append_column(TOMBSTONE, pa.array([False] * latest.num_rows))
        if table is None:  # first batch: nothing to delete, create the table from the upserts
            upserts = latest.filter(pc.invert(pc.fill_null(latest.column(TOMBSTONE), False)))
            write_deltalake(self.path, upserts.drop_columns([TOMBSTONE]), mode="append",
                            commit_properties=commit, storage_options=self.storage_options)
            return
        on = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in self.key_columns)
        deleting, upserting = f"s.{_quoted(TOMBSTONE)}", f"NOT s.{_quoted(TOMBSTONE)}"
        (table.merge(latest, predicate=on, source_alias="s", target_alias="t", commit_properties=commit)
         .when_matched_delete(predicate=deleting)
         .when_matched_update_all(predicate=upserting, except_cols=[TOMBSTONE])
         .when_not_matched_insert_all(predicate=upserting, except_cols=[TOMBSTONE])
         .execute())


def _literal(value: int | datetime, column_type: pa.DataType) -> str:
    """A predicate literal for a range bound: epoch millis for integer columns, a UTC timestamp
    for timestamp columns (bounds may be given as datetimes or epoch millis)."""
    if pa.types.is_timestamp(column_type):
        instant = value if isinstance(value, datetime) else datetime.fromtimestamp(value / 1000, timezone.utc)
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=timezone.utc)
        return f"'{instant.astimezone(timezone.utc).strftime('%Y-%m-%dT%H:%M:%S.%fZ')}'"
    return str(int(value))


def replace_range(path: str, data: Any, ts_column: str, start: int | datetime, end: int | datetime,
                  storage_options: dict[str, str] | None = None) -> int | None:
    """Backfill: replace the rows with start <= ts_column < end by `data`, in ONE transaction
    (delta-rs overwrite with a predicate = Delta's replaceWhere; readers never see the range
    empty). Every row of `data` must lie in the range, else delta-rs rejects the write.
    Returns the new version; None when `data` is None (no rows) and there is no table yet.
    No rows for the range deletes the range."""
    exists = DeltaTable.is_deltatable(str(path), storage_options=storage_options)
    if data is None:
        if not exists:
            return None
        table = DeltaTable(str(path), storage_options=storage_options)
        column_type = pa.schema(table.schema().to_arrow()).field(ts_column).type
        table.delete(_range_predicate(ts_column, column_type, start, end))
        return table.version()
    rows = to_arrow(data)
    if not exists:
        write_deltalake(str(path), rows, mode="append", storage_options=storage_options)
    else:
        predicate = _range_predicate(ts_column, rows.schema.field(ts_column).type, start, end)
        write_deltalake(str(path), rows, mode="overwrite", predicate=predicate, storage_options=storage_options)
    return DeltaTable(str(path), storage_options=storage_options).version()


def _range_predicate(ts_column: str, column_type, start, end) -> str:
    return (f"{_quoted(ts_column)} >= {_literal(start, column_type)} AND "
            f"{_quoted(ts_column)} < {_literal(end, column_type)}")


def read_delta_arrow(path: str, storage_options: dict[str, str] | None = None) -> pa.Table:
    """The table's current snapshot as Arrow (Delta-aware: only files of the current version)."""
    if not DeltaTable.is_deltatable(str(path), storage_options=storage_options):
        raise FileNotFoundError(f"no Delta table at {path}")
    return DeltaTable(str(path), storage_options=storage_options).to_pyarrow_table()


def read_delta(spark, path: str, storage_options: dict[str, str] | None = None):
    """The table's current snapshot as a Spark DataFrame (through Arrow; see the module docstring)."""
    return spark.createDataFrame(read_delta_arrow(path, storage_options))
