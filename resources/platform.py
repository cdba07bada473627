"""Orchestration settings (not engine settings): backfill partitioning, repartition schedule,
check limits, restart policy and the status refresh, read from STREAMJOIN_* environment
variables."""

import os
from dataclasses import dataclass, fields
from datetime import datetime, timezone
from typing import Literal, Mapping, get_args

import dagster as dg

Granularity = Literal["hourly", "daily"]  # one backfill partition per hour or per day
_PARTITION_FORMATS = {"hourly": "%Y-%m-%d-%H:%M", "daily": "%Y-%m-%d"}
_PARTITION_CRONS = {"hourly": "0 * * * *", "daily": "0 0 * * *"}
_WINDOW_MS = {"hourly": 3_600_000, "daily": 86_400_000}
assert set(_PARTITION_FORMATS) == set(_PARTITION_CRONS) == set(_WINDOW_MS) == set(get_args(Granularity))


@dataclass(frozen=True)
class PlatformConfig:
    backfill_granularity: Granularity = "daily"
    # No backfill window before this day ("YYYY-MM-DD"); the partitions offered are the windows
    # holding input data. The default holds any event time, the samples' 1970 too.
    backfill_start: str = "1970-01-01"
    repartition_cron: str = "0 * * * *"  # for PARTITION BY queries without `-- schedule:`
    max_consumer_lag: int = 10_000  # the consumer-lag check fails above this
    restart_max_retries: int = 5  # consecutive failed runs before the restart sensor gives up
    restart_backoff_s: float = 30.0  # wait before restart n: backoff * 2**(n-1), plus jitter
    restarts_per_tick: int = 1  # restarts requested by one tick: a burst of failures is spread
    status_interval_s: int = 15  # how often the query_status sensor refreshes states and lag

    def __post_init__(self) -> None:
        if self.backfill_granularity not in _PARTITION_FORMATS:
            raise ValueError(f"backfill granularity must be one of {sorted(_PARTITION_FORMATS)}, "
                             f"got {self.backfill_granularity!r}")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "PlatformConfig":
        """Each field from STREAMJOIN_<FIELD> (upper case) when set."""
        env = os.environ if env is None else env
        values = {}
        for field in fields(cls):
            raw = env.get(f"STREAMJOIN_{field.name.upper()}")
            if raw:
                values[field.name] = type(getattr(cls, field.name))(raw)
        return cls(**values)

    def _partitions(self, end_offset: int) -> dg.TimeWindowPartitionsDefinition:
        start = datetime.strptime(self.backfill_start, "%Y-%m-%d").replace(tzinfo=timezone.utc)
        return dg.TimeWindowPartitionsDefinition(
            start=start, fmt=_PARTITION_FORMATS[self.backfill_granularity],
            cron_schedule=_PARTITION_CRONS[self.backfill_granularity], timezone="UTC",
            end_offset=end_offset)

    @property
    def window_ms(self) -> int:
        return _WINDOW_MS[self.backfill_granularity]

    def window_key(self, start_ms: int) -> str:
        """The partition key of the window starting at `start_ms` (UTC)."""
        return datetime.fromtimestamp(start_ms / 1000, timezone.utc).strftime(
            _PARTITION_FORMATS[self.backfill_granularity])

    def window_of(self, key: str) -> tuple[int, int]:
        """[start_ms, end_ms) of the window a partition key names."""
        start = datetime.strptime(key, _PARTITION_FORMATS[self.backfill_granularity]).replace(tzinfo=timezone.utc)
        start_ms = int(start.timestamp() * 1000)
        return start_ms, start_ms + self.window_ms

    def offered(self, start_ms: int) -> bool:
        """Whether a window is offered for backfill (not before `backfill_start`)."""
        floor = datetime.strptime(self.backfill_start, "%Y-%m-%d").replace(tzinfo=timezone.utc)
        return start_ms >= floor.timestamp() * 1000

    def backfill_partitions(self, query_name: str) -> dg.DynamicPartitionsDefinition:
        """A query's backfill partitions: the windows its input data is in, added by the
        `query_status` sensor as it finds records (`streamjoin.app.windows`)."""
        return dg.DynamicPartitionsDefinition(name=f"windows_{query_name}")

    def closed_partitions(self) -> dg.TimeWindowPartitionsDefinition:
        """The same windows, closed ones only: what the backfill sensor and the replay check use."""
        return self._partitions(end_offset=0)
