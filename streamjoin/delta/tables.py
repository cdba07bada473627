"""Reading Delta tables where no Spark is at hand: previews, checks and tests, through delta-rs
(`deltalake`). Every write of the data path goes through delta-spark from Spark's executors
(`streamjoin.spark.delta_writes`); nothing here writes.

Reading never uses `spark.read.parquet` on a Delta folder (it is not Delta-aware: it also reads
files a later commit removed): `read_delta` goes deltalake -> Arrow -> spark.createDataFrame, for
a caller that has Spark but wants a table's snapshot without the Delta jars.
"""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable


def read_delta_arrow(path: str, storage_options: dict[str, str] | None = None) -> pa.Table:
    """The table's current snapshot as Arrow (Delta-aware: only files of the current version)."""
    if not DeltaTable.is_deltatable(str(path), storage_options=storage_options):
        raise FileNotFoundError(f"no Delta table at {path}")
    return DeltaTable(str(path), storage_options=storage_options).to_pyarrow_table()


def read_delta(spark, path: str, storage_options: dict[str, str] | None = None):
    """The table's current snapshot as a Spark DataFrame (through Arrow; see the module docstring)."""
    return spark.createDataFrame(read_delta_arrow(path, storage_options))
