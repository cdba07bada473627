"""The table of Kafka client properties a Flink table may give (streamjoin.kafka_properties): each
passed property is one librdkafka takes, under the name the table gives; no name is both passed
and refused; `sasl.jaas.config` is read for the PLAIN and SCRAM login modules' credentials, and
anything else in it is not a login the clients can make. The Spark options carry the passed
properties and nothing unknown."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from confluent_kafka import Consumer, Producer

from streamjoin import kafka_properties as kp
from streamjoin.kafka.client import LIBRDKAFKA, client_config_from_options, kafka_client_config, kafka_python_config
from streamjoin.settings import Settings

SAMPLE_VALUES = {"client.dns.lookup": "use_all_dns_ips", "check.crcs": "true", "isolation.level": "read_uncommitted",
                 "compression.type": "zstd", "client.id": "reader"}


@pytest.mark.parametrize("name", kp.PASSED)
def test_each_passed_property_is_one_librdkafka_takes(name):
    config = {"bootstrap.servers": "127.0.0.1:9", "group.id": "g", "log_level": 0,
              kp.rdkafka_name(name): SAMPLE_VALUES.get(name, "1000")}
    client = Consumer(config) if kp.PASSED[name].role == kp.CONSUMER else Producer(config)
    if isinstance(client, Consumer):
        client.close()


def test_no_property_is_both_taken_and_refused():
    assert not (set(kp.PASSED) | set(kp.SECURITY)) & set(kp.REFUSED)


@dataclass(frozen=True)
class Case:
    jaas: str
    credentials: tuple[str, str] | None


PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
JAAS = [
    Case(f'{PLAIN} required username="alice" password="s3cret";', ("alice", "s3cret")),
    Case(f'{SCRAM} required\n  username="bob"\n  password="a \\"quoted\\" pw";', ("bob", 'a "quoted" pw')),
    Case(f'{PLAIN} required password="x" username="carol"', ("carol", "x")),
    Case(f'{PLAIN} required username="alice";', None),  # no password
    Case(f'{PLAIN} required username=alice password=s3cret;', None),  # values are quoted
    Case('com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;', None),
    Case(f'{PLAIN} optional username="alice" password="s3cret";', None),
]


@pytest.mark.parametrize("case", JAAS, ids=lambda case: case.jaas[:60])
def test_the_credentials_of_a_jaas_config(case):
    assert kp.jaas_credentials(case.jaas) == case.credentials


def test_the_spark_options_carry_the_passed_properties_only():
    settings = Settings(kafka_properties=(("client.id", "reader"), ("fetch.max.wait.ms", "250")))
    config = client_config_from_options({"kafka.bootstrap.servers": "h:9092", "kafka.client.id": "reader",
                                         "kafka.fetch.max.wait.ms": "250"})
    assert config == kafka_client_config(settings, "h:9092")
    assert config[LIBRDKAFKA] == {"client.id": "reader", "fetch.wait.max.ms": "250"}
    assert LIBRDKAFKA not in kafka_python_config(config)
    with pytest.raises(ValueError, match="kafka.linger.ms"):
        client_config_from_options({"kafka.bootstrap.servers": "h:9092", "kafka.linger.ms": "5"})
