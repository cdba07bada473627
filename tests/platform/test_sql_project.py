"""The Dagster layer over the real sql/ folder and engine: definitions load (a broken file fails
loading with its position), a query materialises on the session broker and Spark, new input data
makes the launch sensor request an increment, and a backfill partition replays a day."""

import dagster as dg
import pytest

import definitions
from assets.keys import latest_metadata
from definitions import build_definitions
from resources import default_resources
from resources.platform import PlatformConfig
from streamjoin import project as facade
from streamjoin.dialect.errors import StreamJoinError
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from tests.platform.fixtures import DAY_MS, FIRST_DAY, FIRST_DAY_MS, REPO

pytestmark = pytest.mark.platform
QUERY = "pageviews_enriched"  # LEFT stream-table join: one output row per page view


def test_definitions_load_every_query_of_sql():
    repository = definitions.defs().get_repository_def()
    keys = {k.to_user_string() for k in repository.asset_graph.get_all_asset_keys()}
    project = facade.load_project(REPO / "sql")
    assert {q.name for q in project.queries} <= keys
    assert {f"kafka/{t}" for q in project.queries for t in q.repartition_topics} <= keys
    assert {f"delta/{q.name}" for q in project.queries} <= keys


def test_broken_sql_file_fails_definition_loading(tmp_path, monkeypatch):
    (tmp_path / "sources.sql").write_text(
        (REPO / "sql" / "ksqldb" / "sources.sql").read_text())
    (tmp_path / "broken.sql").write_text(
        "CREATE STREAM broken AS\n  SELECT * FROM orders o JOIN payments p ON p.id = o.id;\n")
    monkeypatch.setattr(definitions, "SQL_DIR", tmp_path)
    with pytest.raises(StreamJoinError, match=r"broken\.sql:2:\d+: \[") as error:
        definitions.defs()
    print(error.value)


@pytest.fixture
def engine_env(pageviews_samples, spark, monkeypatch):
    """The engine reaches the session broker; its Spark session is the test session's."""
    monkeypatch.setenv("STREAMJOIN_KAFKA_BOOTSTRAP", pageviews_samples)
    return pageviews_samples


def pageview_count(bootstrap: str) -> int:
    return sum(admin.end_offsets(bootstrap, "pageviews").values())


def test_materialize_launch_on_new_data_and_backfill(engine_env, instance):
    project = facade.load_project(REPO / "sql")
    defs = build_definitions(project, PlatformConfig(backfill_start=FIRST_DAY))
    job = defs.resolve_job_def(f"stream_{QUERY}")
    assert job.execute_in_process(instance=instance).success
    metadata = latest_metadata(instance, dg.AssetKey(QUERY))
    views = pageview_count(engine_env)
    assert (metadata["input_rows"] >= views, metadata["output_rows"], metadata["consumer_lag"]) \
        == (True, views, 0)

    def launch_tick():
        context = dg.build_sensor_context(instance=instance, definitions=defs,
                                          resources=default_resources())
        result = defs.resolve_sensor_def("launch_streaming_queries").evaluate_tick(context)
        return [r.job_name for r in result.run_requests if r.job_name == job.name]

    assert launch_tick() == []  # caught up
    admin.produce(engine_env, "pageviews",
                  [OutRecord(b'"User_1"', b'{"viewtime": 1, "pageid": "Page_new"}',
                             FIRST_DAY_MS + 60_000)])
    assert launch_tick() == [job.name]  # the new page view is consumer lag
    assert job.execute_in_process(instance=instance).success
    assert latest_metadata(instance, dg.AssetKey(QUERY))["output_rows"] == 1

    backfill = defs.resolve_job_def(f"backfill_{QUERY}")
    assert backfill.execute_in_process(instance=instance, partition_key=FIRST_DAY).success
    replay = latest_metadata(instance, dg.AssetKey(["delta", QUERY]))
    assert (replay["window_start_ms"], replay["window_end_ms"]) == (FIRST_DAY_MS,
                                                                    FIRST_DAY_MS + DAY_MS)
    assert replay["output_rows"] > 0
