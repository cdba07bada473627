"""The `streamjoin_kafka` PySpark data source: Kafka source (batch + streaming) and sink (batch +
streaming) under one short name, like Spark's `kafka` format. Register it in every session:
`spark.dataSource.register(KafkaDataSource)` (streamjoin.spark.session.get_spark does)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from streamjoin.spark.kafka_source import (
    SCHEMA_DDL,
    KafkaBatchReader,
    KafkaStreamReader,
    SourceOptions,
)
from streamjoin.spark.packing import PACKED_INPUT_DDL

if TYPE_CHECKING:
    from streamjoin.spark.kafka_sink import KafkaBatchWriter, KafkaStreamWriter

FORMAT = "streamjoin_kafka"


class KafkaDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT

    def schema(self) -> str:
        return PACKED_INPUT_DDL if SourceOptions.packed_from(self.options) else SCHEMA_DDL

    def reader(self, schema: StructType) -> KafkaBatchReader:
        return KafkaBatchReader(self.options)

    def streamReader(self, schema: StructType) -> KafkaStreamReader:
        return KafkaStreamReader(self.options)

    # The sink is imported where a writer is made: the process that plans a streaming query's
    # reads (one per query start) unpickles this class and would load librdkafka for nothing.
    def writer(self, schema: StructType, overwrite: bool) -> KafkaBatchWriter:
        from streamjoin.spark.kafka_sink import KafkaBatchWriter

        return KafkaBatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        from streamjoin.spark.kafka_sink import KafkaStreamWriter

        return KafkaStreamWriter(self.options, schema)
