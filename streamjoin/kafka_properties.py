"""The Kafka client properties a Flink table may give as `'properties.<name>'`, as one table of
data: for each name Kafka's own (Java) clients take, which of the engine's clients honours it and
under which librdkafka name, or why none does and what to write instead. The planner checks a
table's properties against it (plan.client_properties); the Kafka layer hands them to the clients
(kafka.client). Nothing of the engine is imported here but the settings.

Two kinds reach the clients:
- security properties (`SECURITY`) become the query's security settings (`Settings`: protocol,
  SASL mechanism and credentials, the CA file), which every client of the query takes,
  kafka-python's topic administration too; a table's value wins over the engine's settings;
- the others (`PASSED`) reach the librdkafka clients, which look up a query's offsets, write its
  results and read its input on streamjoin_kafka, and the Java client of Spark's own connector,
  which reads it by default. librdkafka ignores a consumer property in a producer and the
  reverse, so each is given to all of them; the role says which one it acts in.
Any other name is refused: `REFUSED` says why for the ones a Flink user is likely to write."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Mapping

from streamjoin.settings import Settings

CONSUMER, PRODUCER, BOTH = "consumer", "producer", "both"


@dataclass(frozen=True)
class Passed:
    """A property passed on to librdkafka: the client it acts in, and librdkafka's name for it
    where that is not Kafka's."""

    role: str
    rdkafka: str | None = None


PASSED = {
    "client.id": Passed(BOTH),
    "client.dns.lookup": Passed(BOTH),
    "reconnect.backoff.ms": Passed(BOTH),
    "reconnect.backoff.max.ms": Passed(BOTH),
    "retry.backoff.ms": Passed(BOTH),
    "retry.backoff.max.ms": Passed(BOTH),
    "metadata.max.age.ms": Passed(BOTH),
    "connections.max.idle.ms": Passed(BOTH),
    "fetch.min.bytes": Passed(CONSUMER),
    "fetch.max.wait.ms": Passed(CONSUMER, "fetch.wait.max.ms"),
    "check.crcs": Passed(CONSUMER),
    "isolation.level": Passed(CONSUMER),
    "compression.type": Passed(PRODUCER),
    "request.timeout.ms": Passed(PRODUCER),  # librdkafka's consumer has none (the Java one has)
}

# Security properties -> the Settings field each sets; None: sasl.jaas.config sets the SASL
# username and password, ssl.truststore.type is only PEM (the truststore is the CA file).
SECURITY = {
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.jaas.config": None,
    "ssl.truststore.location": "ssl_ca_location",
    "ssl.truststore.type": None,
}
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

_JAVA_CLASS = "names a Java class, which the engine's clients (librdkafka, kafka-python) cannot load"
_FORMATS = "names a Java class: the table's 'key.format' and 'value.format' decide how records are read and written"
_OFFSETS = "the engine keeps each query's offsets in its checkpoint and commits none to a consumer group"
_DELIVERY = ("the engine's sink owns how its producer delivers: acks=all, and Kafka transactions where the "
             "broker honours them (docs/semantics.md)")
_BATCHES = ("the engine's sink producer sizes and times its batches itself (up to the topic's record size "
            "limit); STREAMJOIN_KAFKA_TIMEOUT_S bounds a stalled write")
_FETCHES = "the engine's reader sizes its fetches itself, a range of one partition at a time"
_NO_GROUP = "the engine's readers are assigned their partitions and join no consumer group: it would have no effect"
_CREDENTIALS = ("write Kafka's 'properties.sasl.jaas.config' = 'org.apache.kafka.common.security.plain."
                "PlainLoginModule required username=\"...\" password=\"...\";' (or ScramLoginModule)")
_NO_CLIENT_CERTIFICATES = ("client certificates are not supported: the engine's clients trust a CA "
                           "('properties.ssl.truststore.location', a PEM file) and log in with SASL")

REFUSED = {
    **dict.fromkeys(("key.deserializer", "value.deserializer", "key.serializer", "value.serializer"), _FORMATS),
    **dict.fromkeys(("interceptor.classes", "metric.reporters", "partitioner.class", "sasl.login.class",
                     "sasl.login.callback.handler.class", "sasl.client.callback.handler.class"), _JAVA_CLASS),
    **dict.fromkeys(("enable.auto.commit", "auto.commit.interval.ms"), _OFFSETS),
    **dict.fromkeys(("acks", "enable.idempotence", "transactional.id", "transaction.timeout.ms"), _DELIVERY),
    **dict.fromkeys(("batch.size", "linger.ms", "max.request.size", "buffer.memory", "delivery.timeout.ms",
                     "retries", "max.in.flight.requests.per.connection"), _BATCHES),
    **dict.fromkeys(("fetch.max.bytes", "max.partition.fetch.bytes", "max.poll.records"), _FETCHES),
    **dict.fromkeys(("session.timeout.ms", "heartbeat.interval.ms", "max.poll.interval.ms", "group.instance.id",
                     "partition.assignment.strategy"), _NO_GROUP),
    "socket.connection.setup.timeout.ms": "set STREAMJOIN_KAFKA_TIMEOUT_S, how long the engine's clients wait for the brokers",
    **dict.fromkeys(("sasl.username", "sasl.password"), _CREDENTIALS),
    "ssl.ca.location": "write 'properties.ssl.truststore.location' (a PEM file) with 'properties.ssl.truststore.type' = 'PEM'",
    **dict.fromkeys(("ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
                     "ssl.truststore.password"), _NO_CLIENT_CERTIFICATES),
    "sasl.kerberos.service.name": "the engine's clients log in with PLAIN or SCRAM: 'properties.sasl.mechanism' = "
                                  + " | ".join(MECHANISMS),
}

_LOGIN = re.compile(r"\s*org\.apache\.kafka\.common\.security\.(?:plain\.PlainLoginModule|scram\.ScramLoginModule)"
                    r"\s+required\s+(?P<options>.*?)\s*;?\s*", re.DOTALL)
_OPTION = re.compile(r"\s*([\w.]+)\s*=\s*\"((?:[^\"\\]|\\.)*)\"")


def jaas_credentials(text: str) -> tuple[str, str] | None:
    """(username, password) of a PLAIN or SCRAM login module's `sasl.jaas.config`, else None."""
    login = _LOGIN.fullmatch(text)
    if login is None:
        return None
    options, rest = {}, login["options"]
    while match := _OPTION.match(rest):
        options[match[1]] = re.sub(r"\\(.)", r"\1", match[2])
        rest = rest[match.end():]
    if rest.strip() or not {"username", "password"} <= set(options):
        return None
    return options["username"], options["password"]


def rdkafka_name(name: str) -> str:
    """librdkafka's name for a passed property."""
    return PASSED[name].rdkafka or name


def with_properties(settings: Settings, properties: Mapping[str, str]) -> Settings:
    """`settings` with a query's client properties (checked ones: plan.client_properties): its
    security properties set the security settings, the others ride along for librdkafka."""
    security = {}
    for name, value in properties.items():
        if name == "sasl.jaas.config":
            security["sasl_username"], security["sasl_password"] = jaas_credentials(value)
        elif SECURITY.get(name):
            security[SECURITY[name]] = value
    passed = tuple((name, value) for name, value in sorted(properties.items()) if name in PASSED)
    return replace(settings, **security, kafka_properties=passed)
