"""The backfill partitions as shipped (`PlatformConfig()`, no STREAMJOIN_BACKFILL_* set): they
cover the data that exists — the sample records, in 1970 (and 2019 for s-Server), unshifted — and
today's window, still open; a backfill of the 1970 day recomputes the window the samples of the
query's source are in (fake engine)."""

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import dagster as dg
import pytest

from definitions import build_definitions
from resources.platform import PlatformConfig
from tests.platform.fixtures import DAY_MS, REPO

pytestmark = pytest.mark.platform


def sample_times(pattern: str) -> list[int]:
    """The event times (ms) of the sample records of samples/<pattern>, as `make ui` seeds them."""
    return [json.loads(line)["ts"] for path in sorted((REPO / "samples").glob(pattern))
            for line in path.read_text().splitlines() if line.strip()]


def utc_day(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True)
class KeyCase:
    name: str
    ms: int | None  # an event time; None: now, when the test runs
    key: str | None  # the partition expected to hold it; None: today's (UTC)


KEYS = [
    KeyCase("the earliest sample record", min(sample_times("*/*.jsonl")), "1970-01-01"),
    KeyCase("the latest ksqlDB sample record", max(sample_times("ksqldb/*.jsonl")), "1970-01-01"),
    KeyCase("the latest sample record (s-Server)", max(sample_times("*/*.jsonl")), "2019-03-30"),
    KeyCase("now", None, None),
]


@pytest.mark.parametrize("case", KEYS, ids=lambda c: c.name)
def test_default_backfill_partitions_hold_the_samples_and_today(case):
    ms = case.ms if case.ms is not None else int(datetime.now(UTC).timestamp() * 1000)
    key = case.key or utc_day(ms)
    partitions = PlatformConfig().backfill_partitions()
    window = partitions.time_window_for_partition_key(key)
    assert (key in partitions.get_partition_keys(),  # offered, as of now
            window.start.timestamp() * 1000 <= ms < window.end.timestamp() * 1000) == (True, True)


def test_a_backfill_of_1970_recomputes_the_day_of_the_unshifted_samples(project, engine,
                                                                       resources, instance):
    """clicks_enriched reads the `clicks` samples (event times a few seconds after the epoch):
    the default partitions' 1970-01-01 run backfills that day, which holds every one of them."""
    clicks = sample_times("ksqldb/clicks.jsonl")
    defs = build_definitions(project, PlatformConfig(), resources)
    run = defs.resolve_job_def("backfill_clicks_enriched").execute_in_process(
        instance=instance, partition_key="1970-01-01")
    [window] = [call[2:] for call in engine.calls if call[0] == "backfill"]
    assert (run.success, window) == (True, (0, DAY_MS))
    assert clicks and all(window[0] <= ms < window[1] for ms in clicks)
    delta = instance.get_latest_materialization_event(
        dg.AssetKey(["delta", "clicks_enriched.table"]))
    assert delta.asset_materialization.metadata["partition"].value == "1970-01-01"
