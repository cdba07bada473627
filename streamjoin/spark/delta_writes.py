"""A batch's Delta writes through delta-spark, from the executors: the rows a batch's tasks packed
(`task_sink`) are unpacked where they are (`mapInArrow`) and written by Spark's Delta writer;
the driver only plans the write and commits it.

    append   streams and dead letters: `txnAppId`/`txnVersion` on the write (Delta skips a batch
             id it has committed for that app id: a replayed batch adds nothing)
    merge    tables: MERGE on the key columns, the last row per key in the batch (by `__seq`),
             a tombstone deletes; idempotent through the session's
             `spark.databricks.delta.write.txnAppId`/`txnVersion`, which delta-spark applies to
             MERGE too; the table's first batch is an append of its upserts (same transaction ids)
    replace  backfills: the rows of a time range replaced in one commit (`replaceWhere`); no rows
             for the range delete it

SQL throughout (MERGE INTO, DELETE FROM), so the same code runs in a classic session and in a
Spark Connect server's foreachBatch worker.
"""

from __future__ import annotations

import uuid

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

from streamjoin.delta.rows import SEQ, TOMBSTONE

TXN_APP_ID, TXN_VERSION = "spark.databricks.delta.write.txnAppId", "spark.databricks.delta.write.txnVersion"


def table_schema(spark: SparkSession, path: str) -> pa.Schema | None:
    """The Delta table's schema as Arrow, or None where there is no table yet."""
    try:
        schema = spark.read.format("delta").load(path).schema
    except AnalysisException:
        return None
    return to_arrow_schema(schema, timezone="UTC")


def unpacked(packed: DataFrame, channel: str, schema: pa.Schema) -> DataFrame:
    """The rows packed in the `value` of `packed`'s rows of `channel`, each blob Arrow IPC with
    `schema`'s columns (cast to its types: an ANY column's, unified over the tasks), unpacked on
    the executors."""
    def unpack(batches):
        for batch in batches:
            for blob in batch.column("value").to_pylist():
                yield from pa.ipc.open_stream(blob).read_all().cast(schema).to_batches()

    rows = packed.filter(F.col("channel") == channel).select("value")
    columns = _ddl_columns(schema)
    # Through Spark Connect, mapInArrow's string columns (nested ones too) come out with an
    # explicit UTF8_BINARY collation, which Delta writes into the table's schema as
    # `string collate UTF8_BINARY`, a type deltalake cannot read; a cast to the same DDL type
    # gives plain strings (and costs nothing in a classic session, where they are plain already).
    return rows.mapInArrow(unpack, ", ".join(f"{name} {kind}" for name, kind in columns)).selectExpr(
        *(f"CAST({name} AS {kind}) AS {name}" for name, kind in columns))


def _ddl_columns(schema: pa.Schema) -> list[tuple[str, str]]:
    """(quoted name, DDL type) of each of `schema`'s columns."""
    spark_schema = from_arrow_schema(schema, prefer_timestamp_ntz=False)
    return [(_quoted(f.name), f.dataType.simpleString()) for f in spark_schema.fields]


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _table(path: str) -> str:
    return f"delta.{_quoted(path)}"


def append(rows: DataFrame, path: str, app_id: str, batch_id: int) -> None:
    (rows.drop(SEQ).write.format("delta").mode("append").option("txnAppId", app_id)
     .option("txnVersion", str(batch_id)).save(path))


def merge(rows: DataFrame, path: str, keys: list[str], app_id: str, batch_id: int) -> None:
    """See the module docstring."""
    spark = rows.sparkSession
    last = Window.partitionBy(*(F.col(k) for k in keys)).orderBy(F.col(SEQ).desc())
    latest = rows.withColumn("__last", F.row_number().over(last)).filter("__last = 1").drop("__last", SEQ)
    existing = table_schema(spark, path)
    if existing is None:
        append(latest.filter(~F.col(TOMBSTONE)).drop(TOMBSTONE), path, app_id, batch_id)
        return
    view = f"streamjoin_merge_{uuid.uuid4().hex}"
    latest.createOrReplaceTempView(view)
    columns = [_quoted(name) for name in existing.names if name != TOMBSTONE]
    on = " AND ".join(f"t.{_quoted(k)} = s.{_quoted(k)}" for k in keys)
    tombstone = f"s.{_quoted(TOMBSTONE)}"
    statement = (f"MERGE INTO {_table(path)} t USING {view} s ON {on} "
                 f"WHEN MATCHED AND {tombstone} THEN DELETE "
                 f"WHEN MATCHED THEN UPDATE SET {', '.join(f't.{c} = s.{c}' for c in columns)} "
                 f"WHEN NOT MATCHED AND NOT {tombstone} THEN INSERT ({', '.join(columns)}) "
                 f"VALUES ({', '.join(f's.{c}' for c in columns)})")
    spark.conf.set(TXN_APP_ID, app_id)
    spark.conf.set(TXN_VERSION, str(batch_id))
    try:
        spark.sql(statement)
    finally:
        spark.conf.unset(TXN_APP_ID)
        spark.conf.unset(TXN_VERSION)
        spark.catalog.dropTempView(view)


def replace_range(rows: DataFrame, path: str, column: str, start: int, end: int) -> None:
    """Backfill: the rows with start <= column < end replaced by `rows` (all inside the range)
    in one commit (`delete_range` where the range has no rows)."""
    condition = f"{_quoted(column)} >= {int(start)} AND {_quoted(column)} < {int(end)}"
    existing = table_schema(rows.sparkSession, path)
    rows = rows.drop(SEQ)
    if existing is None:
        rows.write.format("delta").mode("append").save(path)
        return
    if TOMBSTONE not in existing.names:  # a merged table keeps no tombstones
        rows = rows.filter(~F.col(TOMBSTONE)).drop(TOMBSTONE)
    rows.write.format("delta").mode("overwrite").option("replaceWhere", condition).save(path)


def delete_range(spark: SparkSession, path: str, column: str, start: int, end: int) -> None:
    if table_schema(spark, path) is not None:
        spark.sql(f"DELETE FROM {_table(path)} WHERE {_quoted(column)} >= {int(start)} AND {_quoted(column)} < {int(end)}")


def version(spark: SparkSession, path: str) -> int | None:
    """The table's latest version (one metadata row)."""
    if table_schema(spark, path) is None:
        return None
    return int(spark.sql(f"DESCRIBE HISTORY {_table(path)} LIMIT 1").select("version").first()[0])
