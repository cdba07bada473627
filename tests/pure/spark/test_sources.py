"""Which Kafka source a run reads with, and streamjoin's `kafka.*` options as Spark's own Kafka
connector (a Java client) takes them: a SASL user and password become the Java client's login
(`sasl.jaas.config`), the data-loss choice becomes `failOnDataLoss`, the broker timeout bounds the
client's waits, a fetch with nothing new comes back after 10 ms, streamjoin's own options go."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from streamjoin.settings import KafkaSource
from streamjoin.spark.sources import source_for_run, source_on_brokers, spark_connector_options

SPARK, STREAMJOIN = KafkaSource.SPARK, KafkaSource.STREAMJOIN


@dataclass(frozen=True)
class Case:
    wanted: KafkaSource
    end_of_input: bool
    on_data_loss: str
    expected: KafkaSource


@pytest.mark.parametrize("case", [
    Case(SPARK, False, "fail", SPARK),
    Case(SPARK, False, "earliest", SPARK),  # failOnDataLoss=false
    Case(SPARK, True, "fail", STREAMJOIN),  # only streamjoin_kafka marks each partition's end
    Case(SPARK, False, "latest", STREAMJOIN),  # Spark's connector cannot skip to the end
    Case(STREAMJOIN, False, "fail", STREAMJOIN),
])
def test_the_source_a_run_reads_with(case):
    assert source_for_run(case.wanted, case.end_of_input, case.on_data_loss) is case.expected


@pytest.mark.parametrize("wanted, tansu, expected", [
    (SPARK, False, SPARK), (SPARK, True, STREAMJOIN), (STREAMJOIN, False, STREAMJOIN), (STREAMJOIN, True, STREAMJOIN)])
def test_the_source_a_query_reads_with_on_its_brokers(wanted, tansu, expected):
    assert source_on_brokers(wanted, tansu) is expected


BASE = {"kafka.bootstrap.servers": "b1:9092,b2:9092", "kafka.bootstrap.timeout.ms": "10000",
        "startingOffsets": "earliest"}
# The Java client's waits from streamjoin's 10 s timeout (half each for the poll and the position
# lookup after it), read_committed, as librdkafka reads, and a fetch that finds nothing new answered
# after 10 ms, not Kafka's 500 (a few-record batch's source tasks waited it out).
JAVA = {"kafkaConsumer.pollTimeoutMs": "5000", "kafka.default.api.timeout.ms": "5000",
        "kafka.request.timeout.ms": "5000", "fetchOffset.numRetries": "1", "kafka.isolation.level": "read_committed",
        "kafka.fetch.max.wait.ms": "10"}


@pytest.mark.parametrize("options, expected", [
    ({**BASE, "streamjoin.onDataLoss": "fail"},
     {**JAVA, "kafka.bootstrap.servers": "b1:9092,b2:9092", "startingOffsets": "earliest", "failOnDataLoss": "true"}),
    ({**BASE, "streamjoin.onDataLoss": "earliest", "kafka.ssl.truststore.location": "/ca.pem",
      "kafka.ssl.truststore.type": "PEM", "kafka.security.protocol": "SSL"},
     {**JAVA, "kafka.bootstrap.servers": "b1:9092,b2:9092", "startingOffsets": "earliest", "failOnDataLoss": "false",
      "kafka.ssl.truststore.location": "/ca.pem", "kafka.ssl.truststore.type": "PEM",
      "kafka.security.protocol": "SSL"}),
    ({**BASE, "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-512",
      "kafka.sasl.username": "ann", "kafka.sasl.password": 'p"w\\d'},
     {**JAVA, "kafka.bootstrap.servers": "b1:9092,b2:9092", "startingOffsets": "earliest", "failOnDataLoss": "true",
      "kafka.security.protocol": "SASL_PLAINTEXT", "kafka.sasl.mechanism": "SCRAM-SHA-512",
      "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                'username="ann" password="p\\"w\\\\d";'}),
    # a login the query's table gives itself wins; so do its isolation level and request timeout,
    # which the overall wait then covers (the Java admin client refuses a shorter one)
    ({**BASE, "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.username": "ann", "kafka.sasl.password": "x",
      "kafka.sasl.jaas.config": "given", "kafka.isolation.level": "read_uncommitted",
      "kafka.request.timeout.ms": "30000"},
     {**JAVA, "kafka.bootstrap.servers": "b1:9092,b2:9092", "startingOffsets": "earliest", "failOnDataLoss": "true",
      "kafka.sasl.mechanism": "PLAIN", "kafka.sasl.jaas.config": "given", "kafka.isolation.level": "read_uncommitted",
      "kafka.request.timeout.ms": "30000", "kafka.default.api.timeout.ms": "30000"}),
    ({**BASE, "kafka.request.timeout.ms": "1000"},
     {**JAVA, "kafka.bootstrap.servers": "b1:9092,b2:9092", "startingOffsets": "earliest", "failOnDataLoss": "true",
      "kafka.request.timeout.ms": "1000"}),
    # a fetch wait the query's table gives ('properties.fetch.max.wait.ms') wins
    ({**BASE, "kafka.fetch.max.wait.ms": "200"},
     {**JAVA, "kafka.bootstrap.servers": "b1:9092,b2:9092", "startingOffsets": "earliest", "failOnDataLoss": "true",
      "kafka.fetch.max.wait.ms": "200"}),
    # no broker timeout given: the Java client's own waits
    ({"kafka.bootstrap.servers": "b1:9092"},
     {"kafka.bootstrap.servers": "b1:9092", "failOnDataLoss": "true", "kafka.isolation.level": "read_committed",
      "kafka.fetch.max.wait.ms": "10"}),
])
def test_options_as_spark_kafka_connector_takes_them(options, expected):
    assert spark_connector_options(options) == expected


def test_a_mechanism_with_no_password_login_is_a_one_line_error():
    with pytest.raises(ValueError, match="GSSAPI.*sasl.jaas.config"):
        spark_connector_options({**BASE, "kafka.sasl.mechanism": "GSSAPI", "kafka.sasl.username": "ann"})
