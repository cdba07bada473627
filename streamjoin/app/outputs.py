"""Where a query's results go besides its Kafka topic: the output Delta table and the dead letters.

A query's tasks convert their sink records into the table's rows, produce what fits to Kafka,
and dead-letter the rest (`streamjoin.spark.task_sink`); the batch writer has delta-spark write
the rows from the executors (`streamjoin.spark.delta_writes`):

    output table  `<delta root>/<query>`: sink records decoded back into rows (key columns,
                  value columns, `__ts`, `__tombstone`); append for a stream, MERGE by key
                  (delete on tombstone) for a table; exactly-once per batch id
    dead letters  topic `<query>-dead-letters` (JSON value, raw key/value base64) and an
                  append-only Delta table `<delta root>/<query>-dead-letters`: source topic,
                  partition, offset, timestamp, raw bytes, reason, query
"""

from __future__ import annotations

from streamjoin.delta.rows import TableRows, declared_schema
from streamjoin.kinds import Kind
from streamjoin.runtime.compiled import CompiledQuery
from streamjoin.spark import delta_writes
from streamjoin.spark.task_sink import DeadLetters


class DeltaOutput:
    """The query's output table: sink records decoded into rows (key columns, value columns, `__ts`,
    `__tombstone`); append for a stream, MERGE by key (delete on tombstone) for a table;
    exactly-once per batch id, written by delta-spark.

    `rows` is what the query's tasks convert their results with, before any of them is written
    anywhere: to the table's own schema when it exists (so a later batch can never clash with
    it), else to the declared column types. A result that does not fit is a dead letter, kept
    out of Kafka too, so the topic and the table always hold the same results."""

    def __init__(self, query: CompiledQuery, path: str, app_id: str | None = None) -> None:
        # Delta's app id: one per checkpoint lifetime (`<query>@<epoch>`, as the replay ids), so a
        # run on a new checkpoint, whose batch ids start at 0 again, is not skipped as done.
        self.query, self.path, self.app_id = query, path, app_id or query.name
        self.keys = [name for name, _ in query.sink_serde.key_columns]
        self.merge = query.sink.kind == Kind.TABLE and bool(self.keys)

    def rows(self, spark) -> TableRows:
        existing = delta_writes.table_schema(spark, self.path)
        return TableRows(self.query.sink_serde, existing or declared_schema(self.query.sink_serde), self.path)

    def write(self, rows, batch_id: int) -> int | None:
        if self.merge:
            delta_writes.merge(rows, self.path, self.keys, self.app_id, batch_id)
        else:
            delta_writes.append(rows, self.path, self.app_id, batch_id)
        return delta_writes.version(rows.sparkSession, self.path)


def dead_letters(query_name: str, topic: str, path: str) -> DeadLetters:
    """Where a query's tasks send what they reject: `topic` and the Delta table at `path`."""
    return DeadLetters(topic, query_name, path)
