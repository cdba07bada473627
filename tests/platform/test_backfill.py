"""Backfill partitions are the windows the input data is in: the `query_status` sensor scans the
source topics' records and adds each window it finds to the query's partitions (fake engine:
the windows of the sample records — 1970 and 2019 — not every day since 1970); hourly windows
and a floor (STREAMJOIN_BACKFILL_START) as configured; a backfill of the 1970 day recomputes the
window the samples of the query's source are in."""

import json
from dataclasses import dataclass
from datetime import UTC, datetime

import dagster as dg
import pytest

from definitions import build_definitions
from resources.platform import PlatformConfig
from tests.platform.fixtures import DAY_MS, REPO
from tests.platform.test_sensors import tick

pytestmark = pytest.mark.platform


def sample_times(pattern: str) -> list[int]:
    """The event times (ms) of the sample records of samples/<pattern>, as `make ui` seeds them."""
    return [json.loads(line)["ts"] for path in sorted((REPO / "samples").glob(pattern))
            for line in path.read_text().splitlines() if line.strip()]


@dataclass(frozen=True)
class WindowCase:
    name: str
    config: PlatformConfig
    expected: list[str]  # the partitions offered


HOUR_MS = 3_600_000
SAMPLES = sample_times("*/*.jsonl")
WINDOWS = [
    WindowCase("daily: the two days the samples are in", PlatformConfig(), ["1970-01-01", "2019-03-30"]),
    WindowCase("hourly", PlatformConfig(backfill_granularity="hourly"),
               sorted({datetime.fromtimestamp((ms - ms % HOUR_MS) / 1000, UTC).strftime("%Y-%m-%d-%H:%M")
                       for ms in SAMPLES})),
    WindowCase("a floor", PlatformConfig(backfill_start="2000-01-01"), ["2019-03-30"]),
]


@pytest.mark.parametrize("case", WINDOWS, ids=lambda c: c.name)
def test_partitions_are_the_windows_holding_data(case, project, engine, resources, instance):
    window = case.config.window_ms
    for ms in SAMPLES:
        engine.windows[ms - ms % window] = engine.windows.get(ms - ms % window, 0) + 1
    defs = build_definitions(project, case.config, resources)
    result = tick(defs, instance, "query_status", resources)
    for request in result.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    assert sorted(instance.get_dynamic_partitions("windows_clicks_enriched")) == case.expected
    again = tick(defs, instance, "query_status", resources, cursor=result.cursor)
    assert not again.dynamic_partitions_requests  # each window added once
    query = [e for e in result.asset_events if e.asset_key == dg.AssetKey("clicks_enriched")][0]
    shown = {r.data["window"]: r.data["input_records"] for r in query.metadata["data_windows"].value.records}
    assert sorted(shown) == case.expected and sum(shown.values()) <= len(SAMPLES)


def test_a_backfill_of_1970_recomputes_the_day_of_the_unshifted_samples(project, engine,
                                                                       resources, instance):
    """clicks_enriched reads the `clicks` samples (event times a few seconds after the epoch):
    the 1970-01-01 partition backfills that day, which holds every one of them."""
    clicks = sample_times("ksqldb/clicks.jsonl")
    defs = build_definitions(project, PlatformConfig(), resources)
    instance.add_dynamic_partitions("windows_clicks_enriched", ["1970-01-01"])
    run = defs.resolve_job_def("backfill_clicks_enriched").execute_in_process(
        instance=instance, partition_key="1970-01-01")
    [window] = [call[2:] for call in engine.calls if call[0] == "backfill"]
    assert (run.success, window) == (True, (0, DAY_MS))
    assert clicks and all(window[0] <= ms < window[1] for ms in clicks)
    delta = instance.get_latest_materialization_event(
        dg.AssetKey(["delta", "clicks_enriched.table"]))
    assert delta.asset_materialization.metadata["partition"].value == "1970-01-01"
