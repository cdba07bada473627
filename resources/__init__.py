"""Dagster resources for the streamjoin engine.

The engine builds its own Spark session and Kafka clients from the environment
(`streamjoin.settings.Settings`, `streamjoin.spark.session.get_spark`), so each resource's job is to
hand its configuration to the engine through those environment variables when a run, sensor or
check starts, and to offer small admin helpers for orchestration code.
"""

import os
from pathlib import Path

import dagster as dg

from resources.platform import PlatformConfig
from streamjoin.settings import Settings

__all__ = ["SparkResource", "KafkaResource", "DeltaResource", "PlatformConfig", "default_resources"]


def _export(variables: dict[str, str | None]) -> None:
    """Set the variables that have a value; the engine reads them when it creates clients."""
    for name, value in variables.items():
        if value:
            os.environ[name] = value


class SparkResource(dg.ConfigurableResource):
    """Where Spark runs: empty `master` keeps the engine's choice (STREAMJOIN_SPARK_MASTER, else
    `local[2]`; the engine always configures the RocksDB state store); a cluster master
    (`master="spark://host:7077"`) or a Spark Connect server (`remote="sc://host:15002"`, which
    wins over `master`)."""

    master: str = ""
    remote: str = ""

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        _export({"STREAMJOIN_SPARK_MASTER": self.master, "STREAMJOIN_SPARK_REMOTE": self.remote})

    def session(self):
        """The engine's session (created on first use, with streamjoin's data sources)."""
        from streamjoin.spark.session import get_spark

        self.setup_for_execution(dg.build_init_resource_context())
        return get_spark()


class KafkaResource(dg.ConfigurableResource):
    """Kafka connection: `bootstrap` servers ("host:port,..."; empty = the embedded broker under
    STREAMJOIN_HOME, started on first use), security protocol and SASL credentials."""

    bootstrap: str = ""
    security_protocol: str = ""
    sasl_mechanism: str = ""
    sasl_username: str = ""
    sasl_password: str = ""

    def settings(self) -> Settings:
        base = Settings.from_env()
        return Settings(kafka_bootstrap=self.bootstrap or base.kafka_bootstrap, home=base.home,
                        security_protocol=self.security_protocol or base.security_protocol,
                        sasl_mechanism=self.sasl_mechanism or base.sasl_mechanism,
                        sasl_username=self.sasl_username or base.sasl_username,
                        sasl_password=self.sasl_password or base.sasl_password)

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        _export({"STREAMJOIN_KAFKA_BOOTSTRAP": self.bootstrap,
                 "STREAMJOIN_KAFKA_SECURITY_PROTOCOL": self.security_protocol,
                 "STREAMJOIN_KAFKA_SASL_MECHANISM": self.sasl_mechanism,
                 "STREAMJOIN_KAFKA_SASL_USERNAME": self.sasl_username,
                 "STREAMJOIN_KAFKA_SASL_PASSWORD": self.sasl_password})

    def bootstrap_servers(self) -> str:
        """The configured servers, else the embedded broker's (started if needed)."""
        from streamjoin.kafka.embedded import ensure_bootstrap

        return ensure_bootstrap(self.settings())

    def create_topics(self, partitions_by_topic: dict[str, int]) -> None:
        from streamjoin.kafka import admin

        admin.create_topics(self.bootstrap_servers(), partitions_by_topic, self.settings())

    def partition_counts(self, topics: list[str]) -> dict[str, int]:
        """{topic: partitions} for the topics that exist (missing ones are absent)."""
        from streamjoin.kafka import admin

        return admin.partition_counts(self.bootstrap_servers(), topics, self.settings(),
                                      missing_ok=True)

    def end_offsets(self, topic: str) -> dict[int, int]:
        from streamjoin.kafka import admin

        return admin.end_offsets(self.bootstrap_servers(), topic, self.settings())

    def describe_topics(self, topics: list[str]) -> dict[str, dict]:
        """{topic: {"partitions": n, "end_offsets": {partition: offset}}} for existing topics."""
        return {topic: {"partitions": n, "end_offsets": self.end_offsets(topic)}
                for topic, n in self.partition_counts(topics).items()}


class DeltaResource(dg.ConfigurableResource):
    """Where the Delta tables live: `root` (empty = STREAMJOIN_HOME/delta). Relative table paths
    of the queries resolve against it; exported as STREAMJOIN_DELTA_ROOT for the engine.
    `rows_between` reads one time range of a table (for the streaming == batch check)."""

    root: str = ""
    time_column: str = "__ts"  # each output row's event time (ms), as the engine writes it

    def root_path(self) -> Path:
        return Path(self.root) if self.root else Settings.from_env().home / "delta"

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        _export({"STREAMJOIN_DELTA_ROOT": self.root})

    def table_path(self, delta_path: str) -> str:
        if "://" in delta_path or Path(delta_path).is_absolute():
            return delta_path
        return str(self.root_path() / delta_path)

    def version(self, delta_path: str) -> int | None:
        """The table's current version, or None when it does not exist yet."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            return DeltaTable(self.table_path(delta_path)).version()
        except TableNotFoundError:
            return None


    def rows_between(self, delta_path: str, start_ms: int, end_ms: int) -> list[dict]:
        """The rows with `time_column` in [start_ms, end_ms) ([] when the table does not exist)."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        try:
            table = DeltaTable(self.table_path(delta_path))
        except TableNotFoundError:
            return []
        return table.to_pyarrow_table(filters=[(self.time_column, ">=", start_ms),
                                               (self.time_column, "<", end_ms)]).to_pylist()


def default_resources() -> dict:
    """The resources every definition uses, configured from the environment."""
    return {"spark": SparkResource(), "kafka": KafkaResource(), "delta": DeltaResource()}
