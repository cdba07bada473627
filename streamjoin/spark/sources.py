"""A streaming run's input rows, read with one of two Kafka sources (`Settings.kafka_source`):

  spark       (the default) Spark's own connector, `format("kafka")`: a JVM consumer in each
              task, one row a record, with its headers as JSON text.
  streamjoin  `streamjoin_kafka` (`kafka_source`), a Python data source over librdkafka that
              packs its records in chunks itself (`packing`).

A task takes its records (rows, or chunks of one partition's records in offset order) and puts
them in Kafka Streams order (`adapter.ordered_rows`: a shuffle keeps no order).

A run on the spark source falls back to streamjoin_kafka where only that source does the job,
and says so in the log: on Tansu brokers, whose answer for a partition's end offset is the first
offset of its last record batch (Spark's consumer stops there: a 1M-record copy on Tansu came out
572 records short; streamjoin_kafka reads the true end from a fetch); a bounded run that must
flush every window at the end of its input (the source marks each partition's end; Spark's never
does); and the data-loss choice `latest` (Spark's connector can only fail or go on from the
earliest offset).

Both take the same `kafka.*` options; for the Java client a SASL user and password become its
`sasl.jaas.config`, streamjoin's own options become Spark's (`failOnDataLoss`), the broker timeout
bounds its waits, a fetch with nothing new comes back after FETCH_WAIT_MS, and it reads committed
records only, as librdkafka does.
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from streamjoin.kafka.client import END_OF_LOG_WAIT_MS
from streamjoin.settings import KafkaSource
from streamjoin.spark.session import kafka_source_for_query

log = logging.getLogger(__name__)

# librdkafka's names of a SASL login, and the Java client's login module for each mechanism.
_USER, _PASSWORD, _MECHANISM, _JAAS = ("kafka.sasl.username", "kafka.sasl.password",
                                       "kafka.sasl.mechanism", "kafka.sasl.jaas.config")
_LOGIN_MODULES = {"PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
                  "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
                  "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule"}
_TIMEOUT = "kafka.bootstrap.timeout.ms"  # streamjoin's broker timeout (kafka.client)
# Only committed records, as librdkafka reads by default: the Java client's default reads aborted
# transactions too (a query's exactly-once output is a transactional topic).
_ISOLATION = "kafka.isolation.level"
_REQUEST = "kafka.request.timeout.ms"  # a table may give it ('properties.request.timeout.ms')
# How long the broker may hold a fetch that finds nothing new (Kafka's default: 500 ms). A task's
# consumer comes from Spark's pool with a fetch still out from its last range, and with nothing
# newer on the partition the broker keeps it the whole wait: a few-record micro-batch's source
# tasks took ~550 ms each at 500 ms, ~65 ms at 10 ms (docs/operations.md, "Latency on Spark's
# connector").
FETCH_WAIT_MS = END_OF_LOG_WAIT_MS  # the wait streamjoin's own readers use
_FETCH_WAIT = "kafka.fetch.max.wait.ms"
_OURS = (_TIMEOUT, "streamjoin.onDataLoss")  # no Java client or Spark option


def source_on_brokers(wanted: KafkaSource, tansu: bool) -> KafkaSource:
    """The source a query reads with on its brokers: `wanted`, but never Spark's on Tansu."""
    if wanted is KafkaSource.SPARK and tansu:
        log.info("the brokers are Tansu: queries read with streamjoin_kafka (Spark's connector misses records there)")
        return KafkaSource.STREAMJOIN
    return wanted


def source_for_run(wanted: KafkaSource, end_of_input: bool, on_data_loss: str) -> KafkaSource:
    """The source a run reads with: `wanted`, unless only streamjoin_kafka does what it needs."""
    if wanted is KafkaSource.SPARK and (end_of_input or on_data_loss == "latest"):
        why = "marks the end of a bounded input" if end_of_input else "skips to the latest offset on data loss"
        log.info("this run reads with streamjoin_kafka: only it %s", why)
        return KafkaSource.STREAMJOIN
    return wanted


def input_rows(spark: SparkSession, source: KafkaSource, topics: tuple[str, ...], options: dict[str, str],
               end_of_input: bool, max_offsets_per_trigger: int | None) -> DataFrame:
    """The streaming DataFrame of the run's input records, with `topic` and `partition` columns
    (what `TaskRouting` routes on) whatever the source."""
    reader = spark.readStream.option("subscribe", ",".join(topics)).option(
        "startingOffsets", options.get("startingOffsets", "earliest"))
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    if source is KafkaSource.STREAMJOIN:
        return (reader.format(kafka_source_for_query(spark)).options(**options)
                .option("streamjoin.packed", "true").option("streamjoin.endOfInput", str(end_of_input).lower())
                .load())
    return _records(reader.format("kafka").options(**spark_connector_options(options)).option("includeHeaders", "true"))


def bounded_rows(spark: SparkSession, source: KafkaSource, topics: tuple[str, ...], options: dict[str, str],
                 ending_timestamp: int | None) -> DataFrame:
    """A batch read of the topics from their start up to `ending_timestamp` (each partition's
    first record at or after it; the end when None), for a backfill or a batch check."""
    reader = spark.read.option("subscribe", ",".join(topics)).option("startingOffsets", "earliest")
    if ending_timestamp is not None:
        reader = reader.option("endingTimestamp", str(ending_timestamp))
    if source is KafkaSource.STREAMJOIN:
        return reader.format(kafka_source_for_query(spark)).options(**options).option("streamjoin.packed", "true").load()
    return _records(reader.format("kafka").options(**spark_connector_options(options)).option("includeHeaders", "true"))


def _records(reader) -> DataFrame:
    """Spark's Kafka rows as the tasks take them (`packing.row_queues`): a row a record, not
    packed in chunks first: a `mapInArrow` step that did cost a Python worker round trip, which
    made a steady latency batch ~0.2 s longer ("The connector's rows unpacked" in docs/operations.md)."""
    # Headers as JSON text, null when a record has none: a nested column costs the JVM → Arrow
    # step ~10 µs a record even when null (measured: 200k records 4.0 s against 2.1 s).
    headers = F.when(F.size("headers") > 0, F.to_json("headers"))
    return reader.load().select("topic", "partition", "offset", F.unix_millis("timestamp").alias("ts"), "key",
                                "value", headers.alias("headers"))


def spark_connector_options(options: dict[str, str]) -> dict[str, str]:
    """`options` (what streamjoin_kafka takes) as Spark's Kafka connector takes them."""
    spark = {name: value for name, value in options.items() if name not in _OURS + (_USER, _PASSWORD)}
    spark["failOnDataLoss"] = "false" if options.get("streamjoin.onDataLoss") == "earliest" else "true"
    defaults = {_ISOLATION: "read_committed", _FETCH_WAIT: str(FETCH_WAIT_MS), **_waits(options)}
    spark.update({name: value for name, value in defaults.items() if name not in options})
    if options.get(_USER) and _JAAS not in options:
        module = _LOGIN_MODULES.get(options.get(_MECHANISM, "PLAIN").upper())
        if module is None:
            raise ValueError(f"SASL mechanism {options.get(_MECHANISM)!r} has no user/password login for "
                             f"Spark's Kafka connector; give 'properties.sasl.jaas.config' instead")
        spark[_JAAS] = (f'{module} required username="{_quoted(options[_USER])}" '
                        f'password="{_quoted(options.get(_PASSWORD, ""))}";')
    return spark


def _waits(options: dict[str, str]) -> dict[str, str]:
    """The Java client's waits within streamjoin's broker timeout, so brokers gone end a run
    within about the time streamjoin_kafka takes. A task polls for records it knows exist, then
    asks the consumer's position when none came: half the timeout each. The driver's offset
    requests get the same half, asked once (the client retries inside it); its admin client
    refuses an overall wait shorter than a request's, so a request timeout the table gives
    lengthens it. Left alone, these wait 60-120 s and Spark asks three times."""
    if not options.get(_TIMEOUT):
        return {}
    half = max(1, int(options[_TIMEOUT]) // 2)
    request = int(options.get(_REQUEST, half))
    return {"kafkaConsumer.pollTimeoutMs": str(half), "kafka.default.api.timeout.ms": str(max(half, request)),
            _REQUEST: str(request), "fetchOffset.numRetries": "1"}


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
