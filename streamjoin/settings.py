"""Engine settings: where Kafka is, where local state and Delta tables live, where Spark runs.
Read from the environment once (`Settings.from_env`) and passed down; nothing below reads it again."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Mapping, TypeVar

from streamjoin.kinds import DataLossPolicy

# Kafka security settings: (Settings field, environment variable, kafka-python keyword argument).
# streamjoin.kafka.client turns them into client configuration.
# The Spark source/sink options use the same names with a "kafka." prefix and dots, as in Spark's
# built-in Kafka connector (e.g. "kafka.security.protocol").
SECURITY = (
    ("security_protocol", "STREAMJOIN_KAFKA_SECURITY_PROTOCOL", "security_protocol"),
    ("sasl_mechanism", "STREAMJOIN_KAFKA_SASL_MECHANISM", "sasl_mechanism"),
    ("sasl_username", "STREAMJOIN_KAFKA_SASL_USERNAME", "sasl_plain_username"),
    ("sasl_password", "STREAMJOIN_KAFKA_SASL_PASSWORD", "sasl_plain_password"),
    ("ssl_ca_location", "STREAMJOIN_KAFKA_SSL_CA_LOCATION", "ssl_cafile"),  # PEM: the CA clients trust
)


E = TypeVar("E", bound=Enum)


class BrokerKind(Enum):
    """Which broker `streamjoin broker start` runs when no bootstrap servers are configured."""

    KAFKA = "kafka"  # Apache Kafka, one KRaft node from Maven Central's jars
    TANSU = "tansu"  # Tansu, a Kafka-compatible broker from a PyPI wheel (in-memory log)


class KafkaSource(Enum):
    """Which Kafka source a query's Spark stream reads its input topics with (`spark.sources`)."""

    SPARK = "spark"  # Spark's own connector, format("kafka"): a JVM consumer in each task
    STREAMJOIN = "streamjoin"  # streamjoin_kafka: a Python data source over librdkafka


class RegistryKind(Enum):
    """Which schema registry `streamjoin registry start` runs when no registry URL is configured."""

    # The project's own, in Python (streamjoin/registry/server.py): starts in ~0.3 s, keeps schemas
    # on disk, and takes a schema under a given id (IMPORT mode), which the suites' cases need.
    STREAMJOIN = "streamjoin"
    # Apicurio Registry 2.4.2, built from its Maven Central jars (streamjoin/registry/apicurio.py):
    # starts in ~10-15 s, keeps schemas in memory; its Confluent-compatible API has no IMPORT mode.
    APICURIO = "apicurio"


@dataclass(frozen=True)
class Settings:
    """Where Kafka is and where local state lives.

    kafka_bootstrap: "host:port[,host:port]"; None means "use the embedded broker".
    home: state root (broker pid/log files, checkpoints, Delta tables).
    """

    kafka_bootstrap: str | None = None
    home: Path = Path("var")
    security_protocol: str | None = None
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = field(default=None, repr=False)
    ssl_ca_location: str | None = None  # TLS (SSL, SASL_SSL): the PEM file of the CA the brokers' certificates chain to
    delta_root_override: Path | None = None
    spark_master: str | None = None  # None: local[2]
    spark_remote: str | None = None  # a Spark Connect URL; wins over spark_master
    kafka_timeout_s: float = 10.0  # how long a client waits for the brokers to answer at all
    on_data_loss: DataLossPolicy = "fail"  # a checkpoint offset outside the log: fail | earliest | latest
    # A continuous query's micro-batch cadence: an idle trigger only asks Kafka for new offsets,
    # so a short one costs little and bounds how long a new record waits for its batch.
    trigger_interval_ms: int = 200
    # Extra JVM options for a Spark driver this process launches (local mode: the executors too);
    # e.g. `QUICK_START_JAVA_OPTIONS` for sessions that run many small queries and end.
    spark_driver_java_options: str | None = None
    broker_kind: BrokerKind = BrokerKind.TANSU  # the embedded broker's kind (unused with kafka_bootstrap)
    # An embedded Apache Kafka with a TLS listener (SSL, SASL_SSL): its PKCS12 keystore and password.
    broker_keystore: Path | None = None
    broker_keystore_password: str | None = field(default=None, repr=False)
    # A Confluent-compatible schema registry (AVRO, PROTOBUF, JSON_SR formats): its URL (None: the
    # project's own, `streamjoin registry start`) and HTTP basic auth as "user:password".
    schema_registry_url: str | None = None
    schema_registry_auth: str | None = field(default=None, repr=False)
    registry_kind: RegistryKind = RegistryKind.STREAMJOIN  # the started registry's kind (unused with schema_registry_url)
    kafka_source: KafkaSource = KafkaSource.SPARK  # what a query reads its topics with
    # Kafka client properties of a query's tables beyond the security ones, Kafka's names
    # (streamjoin.kafka_properties.PASSED): set per query by the engine, never from the environment.
    kafka_properties: tuple[tuple[str, str], ...] = ()

    @property
    def delta_root(self) -> Path:
        """Where query output tables live: STREAMJOIN_DELTA_ROOT, else <home>/delta."""
        return self.delta_root_override or self.home / "delta"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        security = {field: env.get(var) or None for field, var, _ in SECURITY}
        return cls(
            kafka_bootstrap=env.get("STREAMJOIN_KAFKA_BOOTSTRAP") or None,
            home=Path(env.get("STREAMJOIN_HOME") or "var").resolve(),
            delta_root_override=Path(env["STREAMJOIN_DELTA_ROOT"]).resolve() if env.get("STREAMJOIN_DELTA_ROOT") else None,
            spark_master=env.get("STREAMJOIN_SPARK_MASTER") or None,
            spark_remote=env.get("STREAMJOIN_SPARK_REMOTE") or None,
            kafka_timeout_s=float(env.get("STREAMJOIN_KAFKA_TIMEOUT_S") or 10.0),
            on_data_loss=(env.get("STREAMJOIN_ON_DATA_LOSS") or "fail").lower(),
            trigger_interval_ms=int(env.get("STREAMJOIN_TRIGGER_INTERVAL_MS") or 200),
            spark_driver_java_options=env.get("STREAMJOIN_SPARK_DRIVER_JAVA_OPTIONS") or None,
            broker_kind=choice_from_env(env, "STREAMJOIN_BROKER_KIND", BrokerKind, BrokerKind.TANSU),
            broker_keystore=Path(env["STREAMJOIN_BROKER_KEYSTORE"]).resolve() if env.get("STREAMJOIN_BROKER_KEYSTORE") else None,
            broker_keystore_password=env.get("STREAMJOIN_BROKER_KEYSTORE_PASSWORD") or None,
            schema_registry_url=env.get("STREAMJOIN_SCHEMA_REGISTRY_URL") or None,
            schema_registry_auth=env.get("STREAMJOIN_SCHEMA_REGISTRY_AUTH") or None,
            registry_kind=choice_from_env(env, "STREAMJOIN_REGISTRY_KIND", RegistryKind, RegistryKind.STREAMJOIN),
            kafka_source=choice_from_env(env, "STREAMJOIN_KAFKA_SOURCE", KafkaSource, KafkaSource.SPARK),
            **security,
        )


def choice_from_env(env: Mapping[str, str], variable: str, choices: type[E], default: E) -> E:
    """The member of the enum `choices` whose value `variable` names (any case), else `default`;
    a value it does not know is a one-line error naming the variable and the choices."""
    raw = (env.get(variable) or "").strip().lower()
    if not raw:
        return default
    try:
        return choices(raw)
    except ValueError:
        known = ", ".join(str(member.value) for member in choices)
        raise ValueError(f"{variable}={raw!r} is not one of: {known}") from None
