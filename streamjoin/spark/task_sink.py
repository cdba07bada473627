"""Where a task's results go: produced to Kafka by the task itself, checked against the Delta
table first, dead letters produced to their topic; what is left for Delta travels packed.

A task's output rows (`adapter.process_rows`: SINK records and DEAD_LETTER rows) never reach the
driver. Per batch the task, in its own Python worker:

    1. turns every result its topic would refuse (over max.message.bytes) into a dead letter;
    2. converts the rest into the Delta table's rows (`delta.rows.TableRows`, when the query has a
       Delta output): a result the table cannot take is a dead letter too, so it is in neither
       sink, and Kafka and Delta never disagree;
    3. produces the results left to their topic (librdkafka, replay header
       "<writer_id>:<batch>:<task>.<seq>": a replayed batch gives its records the same ids);
    4. produces its dead letters to the dead-letter topic (JSON, `dead_letters`);
    5. hands Spark one TABLE row (the Delta rows, Arrow IPC) and one DEAD_LETTER row (the dead
       letters, Arrow IPC), which the batch writer unpacks on the executors (`delta_writes`).

Kafka: with `transactions` (a broker that honours them), exactly-once: a task's results of a
batch commit in one Kafka transaction with a marker of (query, step, task, batch), so a replay of
a batch whose transaction committed produces nothing again (`kafka.transactions`); dead letters
stay at-least-once. Without, at-least-once: the task waits for every acknowledgement before its
batch can commit, and a replay produces the same records with the same replay ids. Delta is
exactly-once (app transactions), and a replay converts the same records.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from functools import cached_property
from operator import itemgetter

TABLE_ROWS = "table"  # a task's Delta rows, packed (`delta.rows.TableRows.row_schema`)
DEAD_ROWS = "dead_letters"  # a task's dead letters, packed (`dead_letters.DEAD_LETTER_ARROW_SCHEMA`)
SINK = "sink"  # as `adapter.SINK`
BATCH_ID_PROPERTY = "streaming.sql.batchId"  # Spark's local property for a micro-batch's tasks


@dataclass(frozen=True)
class DeadLetters:
    """Where a query's dead letters go: its dead-letter topic and Delta table (`dead_letters`)."""

    topic: str
    query: str
    path: str


@dataclass(frozen=True)
class TaskSink:
    """The one task-side producer of a query's results and dead letters (see the module docstring).
    `table` is a pickled `delta.rows.TableRows` (unpickled on a task's first use: the processes that
    only plan a query import neither serde nor sqlglot)."""

    client_config: dict
    writer_id: str
    table: bytes | None = None
    dead_letters: DeadLetters | None = None
    transactions: tuple[str, str] | None = None  # (query, step) of the transactional ids; None: at-least-once

    @cached_property
    def _table(self):
        return None if self.table is None else pickle.loads(self.table)

    def open_early(self, task: int):
        """With `transactions`, the task's producer of this batch with its transaction's set-up
        already started (`TransactionalBatchProducer.open_early`), for `emit` to take up; None
        without, or before this process has written a batch of this writer (whose record limit
        it takes: it is known only once the results are)."""
        max_bytes = _LAST_LIMITS.get(self.writer_id) if self.transactions is not None else None
        batch_id = _batch_id() if max_bytes is not None else None
        if batch_id is None:
            return None
        producer = self._transactional(task, max_bytes)
        producer.open_early(int(batch_id))
        return producer

    def emit(self, rows: list[tuple], task: int, early=None) -> tuple[list[tuple], dict]:
        """The packed rows for Spark (see the module docstring) and the task's figures: produced,
        refused_by_kafka, rejected_by_table, table_rows (packed) and their table_schema
        (`delta.rows.schema_figure`), dead_letter_rows (packed: all of the batch's, the runtime's too).
        `early`: what `open_early` returned at the batch's start."""
        from streamjoin.kafka.limits import oversized, topic_limit

        sink = [row for row in rows if row[0] == SINK]
        dead = [row for row in rows if row[0] != SINK]
        limits = {topic: topic_limit(self.client_config, topic) for topic in set(map(itemgetter(1), sink))}
        refused = dict(oversized(limits, *_columns(sink, (1, 2, 3, 9)))) if sink else {}
        sink, too_large = _split(sink, refused, keep_value=False)
        table_rows, rejected = None, {}
        if self._table is not None:
            table_rows, rejections = self._table.convert(list(map(itemgetter(2, 3, 4), sink)), task)
            rejected = dict(rejections)
            sink, unfit = _split(sink, rejected, keep_value=True)
            too_large += unfit
        batch_id = _batch_id()
        produced = self._produce(sink, batch_id, task, min(limits.values(), default=0), early)
        packed = [] if table_rows is None else [_packed_row(TABLE_ROWS, table_rows)]
        dead += too_large
        if self.dead_letters is not None and dead:
            packed.append(_packed_row(DEAD_ROWS, self._dead_letters(dead, batch_id, task)))
        figures = {"produced": produced, "refused_by_kafka": len(refused), "rejected_by_table": len(rejected),
                   "table_rows": 0, "dead_letter_rows": len(dead) if self.dead_letters is not None else 0}
        if table_rows is not None and table_rows.num_rows:
            from streamjoin.delta.rows import schema_figure

            figures.update(table_rows=table_rows.num_rows, table_schema=schema_figure(table_rows.schema))
        return packed, figures

    def _produce(self, sink: list[tuple], batch_id, task: int, max_bytes: int, early) -> int:
        if not sink:
            return 0
        from streamjoin.kafka.rdkafka import produce_columns

        columns = _columns(sink, (1, 2, 3, 4, 9))  # topics, keys, values, timestamps, headers
        if self.transactions is not None and batch_id is not None:
            _LAST_LIMITS[self.writer_id] = max_bytes
            producer = early if early is not None and early.max_bytes == max_bytes else self._transactional(
                task, max_bytes)
            return producer.produce_columns(int(batch_id), *columns)
        return produce_columns(self.client_config, *columns, self.writer_id, batch_id, task, max_bytes=max_bytes)

    def _transactional(self, task: int, max_bytes: int):
        from streamjoin.kafka.transactions import TaskIdentity, TransactionalBatchProducer

        identity = TaskIdentity(*self.transactions, task, self.writer_id)
        return TransactionalBatchProducer(self.client_config, identity, max_bytes)

    def _dead_letters(self, dead: list[tuple], batch_id, task: int):
        """Produces the dead letters to their topic; their rows, as Arrow, for the Delta table."""
        import pyarrow as pa

        from streamjoin.kafka.limits import topic_limit
        from streamjoin.kafka.rdkafka import produce_columns
        from streamjoin.spark.dead_letters import DEAD_LETTER_ARROW_SCHEMA, dead_letter_json, within_limit

        target = self.dead_letters
        letters = within_limit([{"source_topic": row[5], "partition": row[6], "offset": row[7], "timestamp": row[4],
                                 "key": row[2], "value": row[3], "reason": row[8], "query": target.query}
                                for row in dead], topic_limit(self.client_config, target.topic))
        produce_columns(self.client_config, [target.topic] * len(letters), [row["key"] for row in letters],
                        [dead_letter_json(row) for row in letters], [row["timestamp"] for row in letters],
                        [None] * len(letters), f"{self.writer_id}/dead-letters", batch_id, task)
        return pa.Table.from_pylist(letters, schema=DEAD_LETTER_ARROW_SCHEMA)


# writer id -> the record limit of its last transactional write in this process (`open_early`).
_LAST_LIMITS: dict[str, int] = {}


def _batch_id() -> str | None:
    """The micro-batch of the running Spark task (None outside a streaming query's batch)."""
    from pyspark import TaskContext

    return TaskContext.get().getLocalProperty(BATCH_ID_PROPERTY)


def _columns(rows: list[tuple], indexes: tuple[int, ...]) -> list[list]:
    """The columns at `indexes` of `rows` (without a Python step per row)."""
    return [list(map(itemgetter(index), rows)) for index in indexes]


def _split(sink: list[tuple], failed: dict[int, str], keep_value: bool) -> tuple[list[tuple], list[tuple]]:
    """(the sink rows not in `failed`, a dead-letter row for each one in it, with its reason; its
    value left out unless `keep_value`: a result too large for its topic is too large for the
    dead-letter topic too)."""
    if not failed:
        return sink, []
    dead = [("dead", row[1], row[2], row[3] if keep_value else None, *row[4:8], failed[n], None)
            for n, row in enumerate(sink) if n in failed]
    return [row for n, row in enumerate(sink) if n not in failed], dead


def _packed_row(channel: str, table) -> tuple:
    """One output row (`adapter.OUTPUT_SCHEMA`) carrying `table` as Arrow IPC in its value."""
    from streamjoin.spark.packing import to_ipc

    return (channel, None, None, to_ipc(table), *[None] * 6)
