"""Dagster resources: the engine as a client (Dagster's pattern: a resource hands out the client
the code calls; nothing is passed through environment variables).

- `engine` (`EngineResource`): where Kafka is (bootstrap servers, security), where state and
  Delta tables live (home, delta root) and, for Spark Connect, the server URL. Every field left
  empty falls back to `streamjoin.settings.Settings.from_env()` (the `STREAMJOIN_*` variables,
  read, never written). `get_engine()` returns the `streamjoin.app.engine.Engine` built from that
  configuration; assets, checks, jobs and sensors call it.
- `spark` (dagster-pyspark's `LazyPySparkResource`, nested in `engine`): the Spark session, built
  from `streamjoin.app.session.spark_config` (the engine's `CONF` plus master, app name and
  Python interpreter; `spark_resource()`), created only when a run first needs Spark — a sensor tick or a lag check
  never starts it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import dagster as dg
from dagster_pyspark import LazyPySparkResource
from pydantic import PrivateAttr

from resources.platform import PlatformConfig
from streamjoin.app import session, status, topics, windows
from streamjoin.app.engine import Engine
from streamjoin.settings import Settings

__all__ = ["EngineResource", "PlatformConfig", "default_resources", "spark_resource",
           "spark_config"]

def spark_config(settings: Settings | None = None, app_name: str = "streamjoin") -> dict:
    """The engine's Spark settings as a `PySparkResource`/`LazyPySparkResource` `spark_config`
    (`streamjoin.app.session.spark_config`)."""
    return session.spark_config(settings or Settings.from_env(), app_name)


def spark_resource(settings: Settings | None = None,
                   app_name: str = "streamjoin") -> LazyPySparkResource:
    return LazyPySparkResource(spark_config=spark_config(settings, app_name))


class EngineResource(dg.ConfigurableResource):
    """The streamjoin engine for this deployment. Empty fields = the environment's default
    (`Settings.from_env()`); `sasl_password` may be given as `dg.EnvVar("...")`."""

    kafka_bootstrap: str = ""  # "host:port,..."; empty: STREAMJOIN_KAFKA_BOOTSTRAP, else embedded
    security_protocol: str = ""  # e.g. SASL_SSL
    sasl_mechanism: str = ""  # e.g. PLAIN, SCRAM-SHA-512
    sasl_username: str = ""
    sasl_password: str = ""
    home: str = ""  # checkpoints, broker state; empty: STREAMJOIN_HOME, else ./var
    delta_root: str = ""  # output tables; empty: STREAMJOIN_DELTA_ROOT, else <home>/delta
    spark_remote: str = ""  # Spark Connect "sc://host:port"; then `spark` is not used
    schema_registry_url: str = ""  # AVRO/PROTOBUF/JSON_SR; empty: STREAMJOIN_SCHEMA_REGISTRY_URL, else the project's
    schema_registry_auth: str = ""  # "user:password" (HTTP basic), e.g. dg.EnvVar("...")
    spark: LazyPySparkResource  # the session for local / cluster-master Spark

    _engine: Engine | None = PrivateAttr(default=None)

    def settings(self) -> Settings:
        """This resource's configuration over the environment's defaults."""
        base = Settings.from_env()
        fields = {"kafka_bootstrap": self.kafka_bootstrap,
                  "security_protocol": self.security_protocol,
                  "sasl_mechanism": self.sasl_mechanism, "sasl_username": self.sasl_username,
                  "sasl_password": self.sasl_password, "spark_remote": self.spark_remote,
                  "schema_registry_url": self.schema_registry_url, "schema_registry_auth": self.schema_registry_auth,
                  "spark_master": self.spark.spark_config.get("spark.master")}
        paths = {"home": self.home, "delta_root_override": self.delta_root}
        return dataclasses.replace(base, **{k: v for k, v in fields.items() if v},
                                   **{k: Path(v).resolve() for k, v in paths.items() if v})

    def get_engine(self) -> Engine:
        """The engine (one per resource initialisation: per run, check run or sensor tick).
        Neither the broker nor Spark is touched until the engine needs them."""
        if self._engine is None:
            settings = self.settings()
            # Spark Connect is not something PySparkResource builds: the engine's own session.
            self._engine = Engine(settings, spark=None if settings.spark_remote else self._session)
        return self._engine

    def delta_path(self, query) -> str:
        """Where the engine this resource builds writes the query's table (nothing started)."""
        return Engine(self.settings()).delta_path(query)

    def _session(self):
        """The `spark` resource's session, made ready for the engine (`app.session.ready_session`:
        the engine writes the process environment before the lazy session starts, not this layer)."""
        return session.ready_session(self.settings(), lambda: self.spark.spark_session)

    # Small admin helpers for orchestration code (the observable source topics, tests).
    def end_offsets(self, topic: str) -> dict[int, int]:
        return topics.end_offsets(self.get_engine(), topic)

    def create_topics(self, partitions_by_topic: dict[str, int]) -> None:
        topics.create_topics(self.get_engine(), partitions_by_topic)

    def describe_topics(self, names: list[str]) -> dict[str, dict]:
        """{topic: {"partitions": n, "end_offsets": {partition: offset}}} for existing topics."""
        return topics.describe_topics(self.get_engine(), names)

    def latest_records(self, topic: str, limit: int = 10, query=None) -> list[dict]:
        """The newest records of `topic` (partition, offset, timestamp, key, value), newest
        first; [] when it does not exist. With the `query` that reads or writes it, key and value
        are decoded with the topic's format into typed columns."""
        spec = topics.topic_formats(query).get(topic) if query is not None else None
        return topics.topic_tail(self.get_engine(), topic, limit, spec)

    def latest_dead_letters(self, query, limit: int = 10) -> list[dict]:
        """The newest dead letters from the query's dead-letter topic (also while it runs), key
        and value decoded with the source's format as far as it reads them."""
        return topics.dead_letter_tail(self.get_engine(), query, limit)

    def scan_windows(self, topics_: list[str], positions: dict[str, int],
                     window_ms: int) -> windows.WindowScan:
        """Records after `positions` of `topics_` counted per time window (`app.windows`)."""
        return windows.scan_windows(self.get_engine(), topics_, positions, window_ms)

    def figures(self, query) -> status.QueryFigures:
        """Lag per input partition, last batch, state size, output and dead-letter counts."""
        return status.query_figures(self.get_engine(), query)


def default_resources(settings: Settings | None = None) -> dict:
    """The resources every definition uses: the engine configured from the environment (its
    home and Delta root from `settings` when given), and the Spark session resource it uses
    (also a top-level resource, so the UI shows its config)."""
    spark = spark_resource(settings)
    paths = {"home": str(settings.home),
             "delta_root": str(settings.delta_root_override or "")} if settings else {}
    return {"engine": EngineResource(spark=spark, **paths), "spark": spark}
