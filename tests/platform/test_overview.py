"""The `query_status` sensor's figures on a hand-built SqlProject with a fake engine: each query's
observation holds its lag per partition (a table), read/arrival/output rates as floats between
ticks, the latest run's watermark as a time and its late and dropped counts; the overview asset
holds one row per query; new dead letters are observed on the dead-letter assets while a query
runs (issue 40 items 2 and 3)."""

import dagster as dg
import pytest

from assets.keys import dead_letter_topic_key
from assets.overview import OVERVIEW_KEY
from definitions import build_definitions
from resources.platform import PlatformConfig
from tests.platform.test_sensors import tick

pytestmark = pytest.mark.platform


def observed(result, key: dg.AssetKey) -> dict:
    [event] = [e for e in result.asset_events if isinstance(e, dg.AssetObservation) and e.asset_key == key]
    return event.metadata


def test_figures_per_query_and_the_overview_row(project, engine, resources, instance):
    defs = build_definitions(project, PlatformConfig(), resources)
    engine.offsets["clickstream"] = {0: 12}
    engine.lag = 12
    assert defs.resolve_job_def("stream_clicks_enriched").execute_in_process(instance=instance).success
    first = tick(defs, instance, "query_status", resources)
    query = observed(first, dg.AssetKey(["clicks_enriched"]))
    [row] = query["lag_by_partition"].value.records
    assert (row.data["topic"], row.data["partition"], row.data["lag"]) == ("clickstream", 0, 12)
    assert query["watermark"].value == 1.0  # the fake run's watermark_ms 1000, as a time
    assert (query["late_records"].value, query["dropped_records"].value) == (1, 2)
    assert isinstance(query["read_per_second"].value, float)
    overview = observed(first, OVERVIEW_KEY)
    rows = {r.data["query"]: r.data for r in overview["queries"].value.records}
    assert sorted(rows) == ["clicks_enriched", "products_rekeyed"]
    assert rows["clicks_enriched"]["lag"] == 12 and rows["clicks_enriched"]["lag per partition"] == "clickstream/0: 12"
    assert rows["clicks_enriched"]["watermark"] == "1970-01-01 00:00:01 UTC"
    engine.lag, engine.dead_letters = 2, 3  # 10 records read, 3 dead letters since
    second = tick(defs, instance, "query_status", resources, cursor=first.cursor)
    assert observed(second, dg.AssetKey(["clicks_enriched"]))["read_per_second"].value > 0
    assert observed(second, dead_letter_topic_key(project.query("clicks_enriched")))[
        "dead_letters_total"].value == 3
