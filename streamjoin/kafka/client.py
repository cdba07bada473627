"""The one place that turns engine settings into Kafka client configuration, so every
kafka-python client and every Spark Kafka option set agrees."""

from __future__ import annotations

from typing import Mapping

from streamjoin.settings import SECURITY, Settings


def kafka_client_config(settings: Settings | None = None, bootstrap: str | None = None) -> dict:
    """Keyword arguments for every kafka-python client we create (KafkaConsumer, KafkaProducer,
    KafkaAdminClient). `bootstrap` overrides settings.kafka_bootstrap (e.g. the embedded
    broker's)."""
    settings = settings or Settings.from_env()
    servers = bootstrap or settings.kafka_bootstrap
    if not servers:
        raise ValueError("no Kafka bootstrap servers: set STREAMJOIN_KAFKA_BOOTSTRAP or start the "
                         "embedded broker (streamjoin.kafka.embedded.ensure_bootstrap)")
    config = {"bootstrap_servers": servers.split(",")}
    for field, _, kwarg in SECURITY:
        if getattr(settings, field):
            config[kwarg] = getattr(settings, field)
    return config


def client_config_from_options(options: Mapping[str, str]) -> dict:
    """kafka-python keyword arguments from Spark-style source/sink options
    ("kafka.bootstrap.servers", "kafka.security.protocol", ...). `options` may be Spark's
    case-insensitive option dict."""
    bootstrap = options.get("kafka.bootstrap.servers")
    if not bootstrap:
        raise ValueError("option 'kafka.bootstrap.servers' is required")
    settings = Settings(**{field: options.get("kafka." + field.replace("_", "."))
                           for field, _, _ in SECURITY})
    return kafka_client_config(settings, bootstrap)
