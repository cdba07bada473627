"""The `streamjoin_kafka` PySpark data source: Kafka source (batch + streaming) and sink (batch +
streaming) under one short name, like Spark's `kafka` format. Register it in every session:
`spark.dataSource.register(KafkaDataSource)` (streamjoin.spark.session.get_spark does)."""

from __future__ import annotations

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import StructType

from streamjoin.spark.kafka_sink import KafkaBatchWriter, KafkaStreamWriter
from streamjoin.spark.kafka_source import (
    SCHEMA_DDL,
    KafkaBatchReader,
    KafkaStreamReader,
    SourceOptions,
)
from streamjoin.spark.packing import PACKED_INPUT_DDL

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

    def writer(self, schema: StructType, overwrite: bool) -> KafkaBatchWriter:
        return KafkaBatchWriter(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> KafkaStreamWriter:
        return KafkaStreamWriter(self.options, schema)
