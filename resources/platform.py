"""Orchestration settings (not engine settings): backfill partitioning, repartition schedule,
check limits and restart policy, read from STREAMJOIN_* environment variables."""

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Mapping

import dagster as dg

_PARTITION_FORMATS = {"hourly": "%Y-%m-%d-%H:%M", "daily": "%Y-%m-%d"}
_PARTITION_CRONS = {"hourly": "0 * * * *", "daily": "0 0 * * *"}


@dataclass(frozen=True)
class PlatformConfig:
    backfill_granularity: str = "daily"  # hourly | daily
    backfill_start: str = "2026-11-01"  # first partition; a date "YYYY-MM-DD"
    repartition_cron: str = "0 * * * *"  # for PARTITION BY queries without `-- schedule:`
    max_consumer_lag: int = 10_000  # the consumer-lag check fails above this
    restart_max_retries: int = 5  # consecutive failed runs before the restart sensor gives up
    restart_backoff_s: float = 30.0  # wait before restart n: backoff * 2**(n-1)

    def __post_init__(self) -> None:
        if self.backfill_granularity not in _PARTITION_FORMATS:
            raise ValueError(f"backfill granularity must be one of {sorted(_PARTITION_FORMATS)}, "
                             f"got {self.backfill_granularity!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "PlatformConfig":
        env = os.environ if env is None else env
        default = cls()
        return cls(
            backfill_granularity=env.get("STREAMJOIN_BACKFILL_GRANULARITY",
                                         default.backfill_granularity),
            backfill_start=env.get("STREAMJOIN_BACKFILL_START", default.backfill_start),
            repartition_cron=env.get("STREAMJOIN_REPARTITION_CRON", default.repartition_cron),
            max_consumer_lag=int(env.get("STREAMJOIN_MAX_CONSUMER_LAG", default.max_consumer_lag)),
            restart_max_retries=int(env.get("STREAMJOIN_RESTART_MAX_RETRIES",
                                            default.restart_max_retries)),
            restart_backoff_s=float(env.get("STREAMJOIN_RESTART_BACKOFF_S",
                                            default.restart_backoff_s)),
        )

    def backfill_partitions(self) -> dg.TimeWindowPartitionsDefinition:
        start = datetime.strptime(self.backfill_start, "%Y-%m-%d").replace(tzinfo=timezone.utc)
        return dg.TimeWindowPartitionsDefinition(
            start=start, fmt=_PARTITION_FORMATS[self.backfill_granularity],
            cron_schedule=_PARTITION_CRONS[self.backfill_granularity], timezone="UTC")
