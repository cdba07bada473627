"""Engine settings read from the environment, and the one place that turns them into Kafka
client configuration (so every kafka-python client and every Spark Kafka option set agrees)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

# Kafka security settings: (Settings field, environment variable, kafka-python keyword argument).
# The Spark source/sink options use the same names with a "kafka." prefix and dots, as in Spark's
# built-in Kafka connector (e.g. "kafka.security.protocol").
_SECURITY = (
    ("security_protocol", "STREAMJOIN_KAFKA_SECURITY_PROTOCOL", "security_protocol"),
    ("sasl_mechanism", "STREAMJOIN_KAFKA_SASL_MECHANISM", "sasl_mechanism"),
    ("sasl_username", "STREAMJOIN_KAFKA_SASL_USERNAME", "sasl_plain_username"),
    ("sasl_password", "STREAMJOIN_KAFKA_SASL_PASSWORD", "sasl_plain_password"),
)


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
    sasl_password: str | None = None
    delta_root_override: Path | None = None

    @property
    def delta_root(self) -> Path:
        """Where query output tables live: STREAMJOIN_DELTA_ROOT, else <home>/delta."""
        return self.delta_root_override or self.home / "delta"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        env = os.environ if env is None else env
        security = {field: env.get(var) or None for field, var, _ in _SECURITY}
        return cls(
            kafka_bootstrap=env.get("STREAMJOIN_KAFKA_BOOTSTRAP") or None,
            home=Path(env.get("STREAMJOIN_HOME") or "var").resolve(),
            delta_root_override=Path(env["STREAMJOIN_DELTA_ROOT"]).resolve() if env.get("STREAMJOIN_DELTA_ROOT") else None,
            **security,
        )

    def security_options(self) -> dict[str, str]:
        """The security settings that are set, as Spark-style "kafka.*" options."""
        return {
            "kafka." + field.replace("_", "."): getattr(self, field)
            for field, _, _ in _SECURITY
            if getattr(self, field)
        }


def kafka_client_config(settings: Settings | None = None, bootstrap: str | None = None) -> dict:
    """Keyword arguments for every kafka-python client we create (KafkaConsumer, KafkaProducer,
    KafkaAdminClient). `bootstrap` overrides settings.kafka_bootstrap (e.g. the embedded
    broker's)."""
    settings = settings or Settings.from_env()
    servers = bootstrap or settings.kafka_bootstrap
    if not servers:
        raise ValueError("no Kafka bootstrap servers: set STREAMJOIN_KAFKA_BOOTSTRAP or start the "
                         "embedded broker (streamjoin.broker.ensure_bootstrap)")
    config = {"bootstrap_servers": servers.split(",")}
    for field, _, kwarg in _SECURITY:
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
                           for field, _, _ in _SECURITY})
    return kafka_client_config(settings, bootstrap)
