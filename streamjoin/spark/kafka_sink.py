"""Spark's Kafka sink rebuilt as a PySpark Python data source writer (Arrow batches in, one
librdkafka producer per task: `kafka.rdkafka.produce_arrow`), for streaming (`writeStream.format("streamjoin_kafka")`) and for
batch writes (`write.format(...)`, e.g. inside foreachBatch).

Input columns, as Spark's Kafka sink: value (binary, required; null = tombstone), key (binary,
optional/nullable), topic (string, optional if option `topic` is set), partition (int, optional;
default is Kafka's default partitioner: murmur2 of the key, keyless rows round-robin), headers
(array<struct<key string, value binary>>, optional), timestamp (timestamp, optional).

Delivery: at-least-once. Each task flushes and checks every send before returning its commit
message, so a batch is committed only after all its records are acknowledged; a crash between
produce and commit replays the batch. Every record carries the header streamjoin.id =
"<writerId>:<batchId>:<task>.<seq>", identical on replay, so readers can drop the copies
(records.dedupe_replayed). Kafka transactions are not used: the embedded broker (Tansu 0.6)
accepts transactional producers but does not honour aborts (read_committed consumers still see
aborted records), so they would promise exactly-once without delivering it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from streamjoin.kafka.client import client_config_from_options
from streamjoin.kafka.rdkafka import produce_arrow

_KNOWN_COLUMNS = {"key", "value", "topic", "partition", "headers", "timestamp"}


@dataclass
class KafkaCommitMessage(WriterCommitMessage):
    records: int


@dataclass(frozen=True)
class SinkOptions:
    client_config: dict
    topic: str | None
    writer_id: str
    batch_id: str | None  # batch writes (foreachBatch) pass it; streaming takes it from Spark

    @classmethod
    def parse(cls, options: Mapping[str, str], schema: StructType) -> "SinkOptions":
        names = set(schema.fieldNames())
        if "value" not in names:
            raise ValueError("the Kafka sink needs a 'value' column (binary; null = tombstone)")
        unknown = names - _KNOWN_COLUMNS
        if unknown:
            raise ValueError(f"the Kafka sink does not know columns {sorted(unknown)}; "
                             f"allowed: {sorted(_KNOWN_COLUMNS)}")
        topic = options.get("topic")
        if not topic and "topic" not in names:
            raise ValueError("the Kafka sink needs option 'topic' or a 'topic' column")
        return cls(client_config=client_config_from_options(options), topic=topic,
                   writer_id=options.get("writerId") or topic or "streamjoin",
                   batch_id=options.get("batchId"))


def write_arrow(opts: SinkOptions, batches: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
    """Produce every row of `batches`; returns only once all are acknowledged."""
    context = TaskContext.get()
    task = context.partitionId() if context else 0
    batch_id = opts.batch_id or (context and context.getLocalProperty("streaming.sql.batchId"))
    return KafkaCommitMessage(records=produce_arrow(opts.client_config, batches, opts.writer_id, batch_id,
                                                    task=task, default_topic=opts.topic))


class KafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType):
        self._opts = SinkOptions.parse(options, schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return write_arrow(self._opts, iterator)

    def commit(self, messages, batchId: int) -> None:
        """Every task flushed before returning its message: nothing left to do."""

    def abort(self, messages, batchId: int) -> None:
        """Records already produced stay; the replayed batch carries the same streamjoin.id."""


class KafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, str], schema: StructType):
        self._opts = SinkOptions.parse(options, schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> KafkaCommitMessage:
        return write_arrow(self._opts, iterator)

    def commit(self, messages) -> None:
        """Every task flushed before returning its message: nothing left to do."""
