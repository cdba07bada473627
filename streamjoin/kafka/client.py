"""The one place that turns engine settings into Kafka client configuration, so every
kafka-python and librdkafka client and every Spark Kafka option set agrees; and the check that the brokers
answer at all, so an outage reads as one line naming them. A query's client properties
(`Settings.kafka_properties`, from its tables) ride in a client configuration under `LIBRDKAFKA`,
librdkafka's names, which `rdkafka_config` adds and `kafka_python_config` leaves out; in Spark
options they are `kafka.<Kafka's name>`, as Spark's own Kafka connector takes them."""

from __future__ import annotations

import time
from typing import Mapping

from streamjoin.kafka_properties import PASSED, rdkafka_name
from streamjoin.settings import SECURITY, Settings

# How long a reader of ours lets the broker hold a fetch that finds nothing new (Kafka's default:
# 500 ms): at a log's end, that is how long it would wait to learn there is nothing more.
END_OF_LOG_WAIT_MS = 10

_TIMEOUT_OPTION = "kafka.bootstrap.timeout.ms"
_AUTHENTICATION_ERRORS = (-169, 58)  # librdkafka's _AUTHENTICATION, Kafka's SASL_AUTHENTICATION_FAILED
_KWARG_TO_RDKAFKA = {"security_protocol": "security.protocol", "sasl_mechanism": "sasl.mechanism",
                     "sasl_plain_username": "sasl.username", "sasl_plain_password": "sasl.password",
                     "ssl_cafile": "ssl.ca.location"}
# A setting's Spark option, where it is not "kafka." + the field with dots: the CA as Spark's own
# Kafka connector (a Java client) takes a PEM file, so the same options serve format("kafka").
_SPARK_OPTION = {"ssl_ca_location": "kafka.ssl.truststore.location"}
_TRUSTSTORE_TYPE = "kafka.ssl.truststore.type"
LIBRDKAFKA = "librdkafka"  # a client configuration's properties for librdkafka only


class KafkaAuthenticationFailed(ConnectionError):
    """The brokers answered and refused the configured credentials. The message names the
    mechanism, the user and the servers, never the password."""

    def __init__(self, servers: str, settings: Settings) -> None:
        super().__init__(f"the Kafka brokers at {servers} refused the credentials: {settings.security_protocol} "
                         f"{settings.sasl_mechanism} authentication as user {settings.sasl_username!r} failed. "
                         "Check STREAMJOIN_KAFKA_SASL_MECHANISM, _USERNAME and _PASSWORD (or, where the query's "
                         "tables give them, their 'properties.sasl.mechanism' and 'properties.sasl.jaas.config').")


class KafkaUnreachable(ConnectionError):
    """No broker of the configured bootstrap servers answered in time."""

    def __init__(self, servers: str, timeout_s: float, cause: Exception | None = None) -> None:
        detail = f" ({cause})" if cause else ""
        super().__init__(f"cannot reach the Kafka brokers at {servers}: no answer within {timeout_s:g} s{detail}. "
                         "Check STREAMJOIN_KAFKA_BOOTSTRAP and that the brokers are up "
                         "(STREAMJOIN_KAFKA_TIMEOUT_S sets the wait).")


def kafka_client_config(settings: Settings | None = None, bootstrap: str | None = None) -> dict:
    """Keyword arguments for every kafka-python client we create (KafkaConsumer, KafkaProducer,
    KafkaAdminClient). `bootstrap` overrides settings.kafka_bootstrap (e.g. the embedded
    broker's)."""
    settings = settings or Settings.from_env()
    servers = bootstrap or settings.kafka_bootstrap
    if not servers:
        raise ValueError("no Kafka bootstrap servers: set STREAMJOIN_KAFKA_BOOTSTRAP or start the "
                         "embedded broker (streamjoin.kafka.embedded.ensure_bootstrap)")
    config = {"bootstrap_servers": servers.split(","), "bootstrap_timeout_ms": int(settings.kafka_timeout_s * 1000)}
    for field, _, kwarg in SECURITY:
        if getattr(settings, field):
            config[kwarg] = getattr(settings, field)
    if settings.kafka_properties:
        config[LIBRDKAFKA] = {rdkafka_name(name): value for name, value in settings.kafka_properties}
    return config


def kafka_python_config(client_config: dict) -> dict:
    """The keyword arguments a kafka-python client takes of `client_config` (the librdkafka-only
    properties left out)."""
    return {key: value for key, value in client_config.items() if key != LIBRDKAFKA}


def client_timeout_s(client_config: dict) -> float:
    """How long a client waits for the brokers (STREAMJOIN_KAFKA_TIMEOUT_S): for an answer at all,
    and, once a read or a write is under way, for any progress before it gives up."""
    return client_config.get("bootstrap_timeout_ms", Settings.kafka_timeout_s * 1000) / 1000


def rdkafka_config(client_config: dict) -> dict:
    """librdkafka configuration from kafka-python keyword arguments (`kafka_client_config`)."""
    config = {"bootstrap.servers": ",".join(client_config["bootstrap_servers"]), "log_level": 3}
    if "bootstrap_timeout_ms" in client_config:
        config["socket.connection.setup.timeout.ms"] = client_config["bootstrap_timeout_ms"]
    config.update({_KWARG_TO_RDKAFKA[k]: v for k, v in client_config.items() if k in _KWARG_TO_RDKAFKA})
    config.update(client_config.get(LIBRDKAFKA, {}))
    return config


def spark_options(settings: Settings, bootstrap: str) -> dict[str, str]:
    """The same settings as Spark-style `kafka.*` options for the streamjoin_kafka source and sink."""
    options = {"kafka.bootstrap.servers": bootstrap, _TIMEOUT_OPTION: str(int(settings.kafka_timeout_s * 1000))}
    options.update({_option(field): getattr(settings, field) for field, _, _ in SECURITY if getattr(settings, field)})
    if settings.ssl_ca_location:
        options[_TRUSTSTORE_TYPE] = "PEM"
    options.update({"kafka." + name: value for name, value in settings.kafka_properties})
    return options


def _option(field: str) -> str:
    return _SPARK_OPTION.get(field) or "kafka." + field.replace("_", ".")


def client_config_from_options(options: Mapping[str, str]) -> dict:
    """kafka-python keyword arguments from Spark-style source/sink options
    ("kafka.bootstrap.servers", "kafka.security.protocol", ...). `options` may be Spark's
    case-insensitive option dict."""
    bootstrap = options.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise ValueError("option 'kafka.bootstrap.servers' is required")
    timeout_ms = options.get(_TIMEOUT_OPTION)
    if options.get(_TRUSTSTORE_TYPE, "PEM").upper() != "PEM":
        raise ValueError(f"option '{_TRUSTSTORE_TYPE}' must be PEM (a CA certificate file), not "
                         f"{options.get(_TRUSTSTORE_TYPE)!r}")
    settings = Settings(**{field: options.get(_option(field)) for field, _, _ in SECURITY},
                        **({"kafka_timeout_s": int(timeout_ms) / 1000} if timeout_ms else {}),
                        kafka_properties=_passed_options(options))
    return kafka_client_config(settings, bootstrap)


def _passed_options(options: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The client properties among the `kafka.*` options (streamjoin.kafka_properties.PASSED);
    another `kafka.*` option than those and the settings' is an error, never ignored."""
    own = {"kafka.bootstrap.servers", _TIMEOUT_OPTION, _TRUSTSTORE_TYPE, *(_option(f) for f, _, _ in SECURITY)}
    given = sorted((key[len("kafka."):], value) for key, value in options.items()
                   if key.startswith("kafka.") and key not in own)
    unknown = [name for name, _ in given if name not in PASSED]
    if unknown:
        raise ValueError(f"option(s) {', '.join('kafka.' + n for n in unknown)} not taken: the Kafka client "
                         f"properties passed on are {', '.join(PASSED)} (streamjoin.kafka_properties)")
    return tuple(given)


def check_reachable(settings: Settings, bootstrap: str) -> None:
    """Raise KafkaUnreachable unless a broker answers a metadata request within the timeout, and
    KafkaAuthenticationFailed when the brokers answer but refuse the configured credentials.

    On librdkafka, whose error callback tells a refused login at once (kafka-python reported one as
    no answer at all, after the whole timeout); its own log is off here, the outcome is the one
    line raised."""
    from confluent_kafka import Consumer, KafkaException  # the Spark workers import this module

    refused: list = []

    def on_error(error) -> None:
        if error.code() in _AUTHENTICATION_ERRORS:
            refused.append(error)

    config = rdkafka_config(kafka_client_config(settings, bootstrap))
    consumer = Consumer({**config, "group.id": "streamjoin-reachability", "log_level": 0, "error_cb": on_error})
    deadline = time.monotonic() + settings.kafka_timeout_s
    try:
        while time.monotonic() < deadline and not refused:
            try:
                consumer.list_topics(timeout=min(0.5, max(0.05, deadline - time.monotonic())))
                return
            except KafkaException:
                consumer.poll(0)  # serves the error callback
        if refused:
            raise KafkaAuthenticationFailed(bootstrap, settings) from None
        raise KafkaUnreachable(bootstrap, settings.kafka_timeout_s)
    finally:
        consumer.close()
