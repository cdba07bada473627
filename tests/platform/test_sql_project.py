"""The Dagster layer over the real sql/ folder and engine: definitions load (a broken file becomes
a failing asset beside the others), `make ui`'s seeding, a query materialises on the session
broker and Spark with its checks, a malformed record shows in the dead-letter previews, new input
data makes the launch sensor request an increment, and a backfill partition replays a day — all
through the engine resource's configuration (broker, home, Delta root), none through the
environment."""

import re
import sys

import dagster as dg
import pytest

import definitions
from assets.keys import latest_metadata
from assets.tables import table_version
from definitions import build_definitions
from resources import EngineResource, spark_resource
from resources.platform import PlatformConfig
from streamjoin.app.project import load_project
from streamjoin.kafka import admin
from streamjoin.kafka.records import OutRecord
from tests.platform.fixtures import DAY_MS, FIRST_DAY, FIRST_DAY_MS, REPO

from tests.platform.test_sensors import tick

pytestmark = pytest.mark.platform
QUERY = "pageviews_enriched"  # LEFT stream-table join: one output row per page view


def test_definitions_load_every_query_of_sql():
    repository = definitions.defs().get_repository_def()
    keys = {k.to_user_string() for k in repository.asset_graph.get_all_asset_keys()}
    project = load_project(REPO / "sql")
    assert {q.name for q in project.queries} <= keys
    assert {f"kafka/{t}.topic" for q in project.queries for t in q.repartition_topics} <= keys
    assert not project.broken
    assert {f"delta/{q.name}.table" for q in project.queries} <= keys


def test_a_broken_sql_file_leaves_the_others_loaded(tmp_path, monkeypatch):
    (tmp_path / "sources.sql").write_text(
        (REPO / "sql" / "ksqldb" / "sources.sql").read_text())
    (tmp_path / "shipped_orders.sql").write_text(
        (REPO / "sql" / "ksqldb" / "shipped_orders.sql").read_text())
    (tmp_path / "broken.sql").write_text(
        "CREATE STREAM broken AS\n  SELECT * FROM orders o JOIN payments p ON p.id = o.id;\n")
    monkeypatch.setattr(definitions, "SQL_DIR", tmp_path)
    defs = definitions.defs()
    keys = {k.to_user_string() for k in defs.get_repository_def().asset_graph.get_all_asset_keys()}
    assert {"broken", "shipped_orders", "delta/shipped_orders.table"} <= keys
    description = defs.get_assets_def("broken").specs_by_key[dg.AssetKey("broken")].description
    assert re.match(rf"{re.escape(str(tmp_path))}/broken\.sql:2:\d+: \[[a-z-]+\] ", description)
    assert defs.resolve_job_def("stream_shipped_orders")  # its jobs are there too


def test_status_sensor_on_the_real_project(pageviews_samples, tmp_path, instance):
    """One tick over every query of sql/ on the session broker (some source topics missing):
    a state per query, the existing source topics observed; Kafka metadata only, no Spark."""
    resources = engine_resources(pageviews_samples, tmp_path)
    defs = build_definitions(load_project(REPO / "sql"), resources=resources)
    with dg.build_sensor_context(instance=instance, definitions=defs,
                                 resources=resources) as context:
        result = defs.resolve_sensor_def("query_status").evaluate_tick(context)
    states = {e.asset_key.to_user_string(): e.metadata["state"].value for e in result.asset_events
              if isinstance(e, dg.AssetObservation) and "state" in e.metadata}
    assert set(states) == {q.name for q in load_project(REPO / "sql").queries}
    assert set(states.values()) == {"never run"}
    observed = {e.asset_key.to_user_string() for e in result.asset_events
                if isinstance(e, dg.AssetObservation) and "state" not in e.metadata}
    assert "kafka/pageviews.topic" in observed


def test_make_ui_seeds_the_samples(pageviews_samples, tmp_path):
    """`python -m jobs.samples` (make ui): every sample topic holds records; a second time it
    says they are already there (one line each time). After the shifted page views: those stay."""
    from jobs.samples import seed

    kafka_bootstrap = pageviews_samples
    engine = engine_resources(kafka_bootstrap, tmp_path)["engine"].get_engine()
    first, again = seed(engine, REPO / "sql"), seed(engine, REPO / "sql")
    assert re.fullmatch(r"sample data: (\d+ records to \d+ topics|already on the broker) at \S+",
                        first)
    assert again == f"sample data: already on the broker at {kafka_bootstrap}"
    project = load_project(REPO / "sql")
    # A sample file is found as produce_samples finds it: ksqlDB folds `pageviews` to PAGEVIEWS.
    stems = {path.stem.lower() for path in (REPO / "samples").glob("*/*.jsonl")}
    samples = {s.topic for s in project.sources if s.name.lower() in stems}
    assert samples and all(sum(admin.end_offsets(kafka_bootstrap, t).values()) for t in samples)


def engine_resources(bootstrap: str, root) -> dict:
    """The default resources with the engine on `bootstrap`, its checkpoints and Delta tables
    under `root` (a fresh home: the query starts from the beginning of its topics)."""
    spark = spark_resource()
    return {"engine": EngineResource(kafka_bootstrap=bootstrap, home=str(root / "home"),
                                     delta_root=str(root / "tables"), spark=spark),
            "spark": spark}


@pytest.fixture
def engine_env(pageviews_samples, spark, tmp_path):
    """(bootstrap, resources): the engine reaches the session broker; its Spark session is the
    test session's (the spark resource's getOrCreate finds it)."""
    return pageviews_samples, engine_resources(pageviews_samples, tmp_path)


def pageview_count(bootstrap: str) -> int:
    return sum(admin.end_offsets(bootstrap, "pageviews").values())


def test_materialize_launch_on_new_data_and_backfill(engine_env, instance, tmp_path):
    bootstrap, resources = engine_env
    project = load_project(REPO / "sql")
    defs = build_definitions(project, PlatformConfig(backfill_start=FIRST_DAY), resources)
    job = defs.resolve_job_def(f"stream_{QUERY}")
    assert job.execute_in_process(instance=instance).success
    metadata = latest_metadata(instance, dg.AssetKey(QUERY))
    views = pageview_count(bootstrap)
    assert views > 0, "the sample page views were produced"
    assert (metadata["input_rows"] >= views, metadata["output_rows"], metadata["consumer_lag"]) \
        == (True, views, 0)
    # The table is where the resource's Delta root says: asset, engine and metadata agree.
    table = str(tmp_path / "tables" / QUERY)
    table_key = dg.AssetKey(["delta", f"{QUERY}.table"])
    assert defs.get_assets_def(table_key).specs_by_key[table_key].metadata["path"].value == table
    assert (metadata["delta_path"], latest_metadata(instance, table_key)["path"]) == (table, table)
    assert table_version(table) is not None

    def launch_tick():
        with dg.build_sensor_context(instance=instance, definitions=defs,
                                     resources=resources) as context:
            result = defs.resolve_sensor_def("launch_streaming_queries").evaluate_tick(context)
        return [r.job_name for r in result.run_requests if r.job_name == job.name]

    assert launch_tick() == []  # caught up
    admin.produce(bootstrap, "pageviews",
                  [OutRecord(b'"User_1"', b'{"viewtime": 1, "pageid": "Page_new"}',
                             FIRST_DAY_MS + 60_000)])
    assert launch_tick() == [job.name]  # the new page view is consumer lag
    assert job.execute_in_process(instance=instance).success
    assert latest_metadata(instance, dg.AssetKey(QUERY))["output_rows"] == 1

    # The status sensor finds the windows the page views are in: they are the partitions.
    status = tick(defs, instance, "query_status", resources)
    for request in status.dynamic_partitions_requests:
        instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
    assert FIRST_DAY in instance.get_dynamic_partitions(f"windows_{QUERY}")
    backfill = defs.resolve_job_def(f"backfill_{QUERY}")
    assert backfill.execute_in_process(instance=instance, partition_key=FIRST_DAY).success
    replay = latest_metadata(instance, table_key)
    assert (replay["window_start_ms"], replay["window_end_ms"]) == (FIRST_DAY_MS,
                                                                    FIRST_DAY_MS + DAY_MS)
    assert replay["output_rows"] > 0
    assert replay["path"] == table  # the backfill replaced the window of the same table
    # the table's preview stays, and no streaming figure is recorded as a zero
    assert replay["latest_rows"].records and "input_rows" not in replay


def test_continuous_run_reports_progress_while_running(engine_env, instance):
    """A continuous run (stopped after a few seconds) records one observation per batch with
    data, then the materialization."""
    bootstrap, resources = engine_env
    defs = build_definitions(load_project(REPO / "sql"), resources=resources)
    admin.produce(bootstrap, "pageviews",
                  [OutRecord(b'"User_2"', b'{"viewtime": 2, "pageid": "Page_live"}',
                             FIRST_DAY_MS + 120_000)])
    config = {"ops": {QUERY: {"config": {"mode": "continuous", "stop_after_s": 8}}}}
    result = defs.resolve_job_def(f"stream_{QUERY}").execute_in_process(instance=instance,
                                                                         run_config=config)
    assert result.success
    observations = instance.fetch_observations(dg.AssetKey(QUERY), limit=10).records
    assert len(observations) >= 1
    metadata = latest_metadata(instance, dg.AssetKey(QUERY))
    assert (metadata["mode"], metadata["output_rows"] >= 1) == ("continuous", True)


def test_a_malformed_record_shows_in_the_dead_letter_previews(engine_env, instance):
    """A page view whose value is not JSON: dead-lettered with its reason, shown in the latest
    rows of the dead-letter topic and table; the run's checks flag it."""
    bootstrap, resources = engine_env
    defs = build_definitions(load_project(REPO / "sql"), resources=resources)
    admin.produce(bootstrap, "pageviews",
                  [OutRecord(b'"User_1"', b'{"viewtime": ', FIRST_DAY_MS + 180_000)])
    result = defs.resolve_job_def(f"stream_{QUERY}").execute_in_process(instance=instance)
    assert result.success
    [row] = [r.data for r in latest_metadata(instance, dg.AssetKey(
        ["delta", f"dead-letters.{QUERY}.table"]))["latest_rows"].records][:1]
    assert (row["source_topic"], row["value (raw)"]) == ("pageviews", '{"viewtime": ')
    assert "value: not valid JSON" in row["reason"] and row["timestamp"].startswith("2026-11-19T")
    topic = [r.data for r in latest_metadata(instance, dg.AssetKey(
        ["kafka", f"dead-letters.{QUERY}.topic"]))["latest_rows"].records]
    assert topic and "value: not valid JSON" in topic[0]["reason"]
    assert topic[0]["value (raw)"] == '{"viewtime": '
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["no_dead_letters"] is False
    print(f"dead letter: {row['reason']}")


def test_scheduled_repartition_job_rekeys_products(kafka_bootstrap, spark, tmp_path):
    """products_rekeyed (PARTITION BY, `-- schedule: 0 * * * *`): the schedule's run request
    runs the job, which writes the rekeyed topic with the declared 6 partitions."""
    from tests.platform.fixtures import produce_shifted_samples

    produce_shifted_samples(kafka_bootstrap, tmp_path / "samples", "ksqldb", ("products",))
    resources = engine_resources(kafka_bootstrap, tmp_path)
    project = load_project(REPO / "sql")
    defs = build_definitions(project, resources=resources)
    schedule = defs.resolve_schedule_def("repartition_products_rekeyed_schedule")
    assert schedule.cron_schedule == "0 * * * *"
    with dg.DagsterInstance.ephemeral() as instance:
        context = dg.build_schedule_context(instance=instance)
        [request] = schedule.evaluate_tick(context).run_requests
        job = defs.resolve_job_def(schedule.job_name)
        assert job.execute_in_process(instance=instance, tags=request.tags).success
        products = sum(admin.end_offsets(kafka_bootstrap, "products").values())
        assert latest_metadata(instance, dg.AssetKey("products_rekeyed"))["output_rows"] == products
    output = project.query("products_rekeyed").output_topic
    assert resources["engine"].describe_topics([output])[output]["partitions"] == 6


def test_resources_reach_the_broker_delta_and_engine(kafka_bootstrap, spark, tmp_path,
                                                    unique_topic, monkeypatch):
    """The engine resource's fields reach the Engine it hands out (over the environment's
    defaults); its Spark session is the spark resource's, ready for the engine; a Spark Connect
    URL makes the engine build its own (Connect) session instead."""
    engine = EngineResource(kafka_bootstrap=kafka_bootstrap, delta_root=str(tmp_path),
                            spark=spark_resource())
    engine.create_topics({unique_topic: 3})
    assert engine.describe_topics([unique_topic, "no-such-topic"]) == \
        {unique_topic: {"partitions": 3, "end_offsets": {0: 0, 1: 0, 2: 0}}}
    client = engine.get_engine()
    query = load_project(REPO / "sql").query(QUERY)
    assert (client.bootstrap, client.delta_path(query)) == (kafka_bootstrap, str(tmp_path / QUERY))
    assert table_version(client.delta_path(query)) is None
    assert client.spark is spark  # the session the test session already runs (getOrCreate)
    assert spark.sparkContext.pythonExec == sys.executable  # workers run this venv's python

    monkeypatch.setenv("STREAMJOIN_DELTA_ROOT", str(tmp_path / "from-env"))
    assert EngineResource(spark=spark_resource()).settings().delta_root == tmp_path / "from-env"
    assert engine.settings().delta_root == tmp_path  # configured beats the environment

    import streamjoin.spark.session as session

    built = []
    monkeypatch.setattr(session, "get_spark", lambda settings, **_: built.append(settings) or "sc")
    remote = EngineResource(spark_remote="sc://spark:15002", spark=spark_resource()).get_engine()
    assert remote.spark == "sc" and built[0].spark_remote == "sc://spark:15002"
