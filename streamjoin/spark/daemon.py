"""Spark's Python worker daemon with the engine's task modules imported once, before it forks.

Spark forks every Python worker of a query's tasks from a daemon process (`pyspark.daemon`). A
task's first batch unpickles its runtime factory, which imports the compiler, the planner and
sqlglot: ~0.65 s of CPU per task on this machine, paid again by every new worker. Imported here,
in the daemon (`spark.python.daemon.module`), every fork starts with them.

Spark also puts its core jar on the workers' path, for a PySpark packaged inside it. Where PySpark
is installed elsewhere the jar holds nothing to import, yet each new worker re-reads the jar's whole
zip directory when its first task adds Spark's files to the path (`importlib.invalidate_caches`:
~55 ms of CPU here). The daemon drops such jars from the path its workers inherit.

Only modules that start no thread may be imported before a fork (the child would lack the
thread, and any lock it held would stay held): pandas, pyarrow and numpy start native threads
when imported, so nothing here imports them (`tests/pure/spark/test_light_imports.py`).

The daemon also gives pyspark's transformWithStateInPandas serializer the column-wise grouping
of its input (`grouped_rows`), for every worker it forks.
"""

import sys

import pyspark
import streamjoin.runtime.compiler  # noqa: F401  (the runtime factory's modules, and sqlglot)
import streamjoin.spark.adapter  # noqa: F401  (the stateful processor: pyspark's pure-Python parts)
import streamjoin.spark.paged_state  # noqa: F401
from pyspark.daemon import manager
from streamjoin.spark import grouped_rows


def drop_unused_jars() -> None:
    """Jars off the import path, unless PySpark itself was imported from one."""
    unused = [entry for entry in sys.path if entry.endswith(".jar") and not pyspark.__file__.startswith(entry)]
    sys.path[:] = [entry for entry in sys.path if entry not in unused]
    for entry in unused:
        sys.path_importer_cache.pop(entry, None)


if __name__ == "__main__":
    drop_unused_jars()
    grouped_rows.install()
    manager()
