"""The asset factory and definitions on a hand-built SqlProject with a fake engine (the Dagster
layer alone): lineage and node labels, descriptions, code versions, the metadata and previews of
a materialization, the warning of a run that read nothing, run config, a broken file beside
working ones, and the Delta root configured on the engine resource."""

import logging
from dataclasses import dataclass

import dagster as dg
import pytest

from assets import build_assets
from assets.keys import latest_metadata, recorded_fingerprint
from definitions import build_definitions
from resources import default_resources
from streamjoin.app.project import BrokenFile
from streamjoin.dialect.errors import StreamJoinError
from tests.platform.fixtures import fake_resources

pytestmark = pytest.mark.platform


@dataclass(frozen=True)
class Case:
    asset: str
    parents: set[str]


# source topic -> repartition topic -> join -> output topic / Delta table / dead letters; the
# repartition topic hangs below the source it re-keys (Query.repartition_inputs).
LINEAGE = [
    Case("kafka/clickstream.topic", set()),
    Case("kafka/clicks_enriched-clicks-repartition.topic", {"kafka/clickstream.topic"}),
    Case("clicks_enriched", {"kafka/clicks_enriched-clicks-repartition.topic",
                             "kafka/click_users.topic"}),
    Case("kafka/clicks_enriched.topic", {"clicks_enriched"}),
    Case("delta/clicks_enriched.table", {"clicks_enriched"}),
    Case("kafka/dead-letters.clicks_enriched.topic", {"clicks_enriched"}),
    Case("delta/dead-letters.clicks_enriched.table", {"clicks_enriched"}),
    Case("products_rekeyed", {"kafka/products.topic"}),
    Case("kafka/products_rekeyed.topic", {"products_rekeyed"}),
]


@pytest.mark.parametrize("case", LINEAGE, ids=lambda c: c.asset)
def test_lineage(project, case):
    graph = build_definitions(project).get_repository_def().asset_graph
    node = graph.get(dg.AssetKey.from_user_string(case.asset))
    assert {p.to_user_string() for p in node.parent_keys} == case.parents


def test_node_labels_say_what_each_node_is(project):
    """The graph labels a node with its key's last part: the query's name, `<topic>.topic`,
    `<query>.table` — never the same label twice (the output topic is named like the query)."""
    graph = build_definitions(project).get_repository_def().asset_graph
    labels = [key.path[-1] for key in graph.get_all_asset_keys()]
    assert len(labels) == len(set(labels))
    assert {"clicks_enriched", "clicks_enriched.topic", "clicks_enriched.table",
            "dead-letters.clicks_enriched.topic", "dead-letters.clicks_enriched.table"} <= \
        set(labels)


def test_query_asset_carries_sql_explain_code_version_and_group(project):
    spec = project.query("clicks_enriched")
    assets_def = build_assets(project, default_resources()["engine"]).queries["clicks_enriched"]
    key = dg.AssetKey("clicks_enriched")
    description = assets_def.specs_by_key[key].description
    assert spec.sql in description and "Repartition[clicks by userId]" in description
    assert assets_def.code_versions_by_key[key] == spec.code_version
    assert {s.group_name for s in assets_def.specs} == {"ksqldb"}


def preview_rows(instance, key: str) -> list[dict]:
    table = latest_metadata(instance, dg.AssetKey.from_user_string(key))["latest_rows"]
    return [record.data for record in table.records]


def test_materialize_records_metadata_previews_and_fingerprint(project, engine, resources,
                                                               instance):
    engine.records = {"clicks_enriched": [{"partition": 0, "offset": 6, "key": b"1",
                                           "value": b'{"url": "/home"}'}],
                      "clicks_enriched-dead-letters": [{"partition": 0, "offset": 0,
                                                        "value": b'{"reason": "bad JSON"}'}]}
    engine.rows = [{"url": "/home", "__ts": 1_000}]
    result = dg.materialize([build_assets(project, resources["engine"]).queries["clicks_enriched"]],
                            instance=instance, resources=resources)
    assert result.success
    assert engine.calls == [("run", "clicks_enriched", "available_now")]
    metadata = latest_metadata(instance, dg.AssetKey("clicks_enriched"))
    assert {k: metadata[k] for k in ("input_rows", "output_rows", "dead_letters",
                                     "late_records", "dropped_records", "watermark_ms")} == \
        {"input_rows": 10, "output_rows": 7, "dead_letters": 0, "late_records": 1,
         "dropped_records": 2, "watermark_ms": 1_000}
    assert metadata["watermark"] == 1.0  # a timestamp (s): the UI shows it as a date and time
    assert latest_metadata(instance, dg.AssetKey(["delta", "clicks_enriched.table"]))[
        "delta_version"] == 3
    assert recorded_fingerprint(instance, project.query("clicks_enriched")) == \
        project.query("clicks_enriched").state_fingerprint
    progress = instance.fetch_observations(dg.AssetKey("clicks_enriched"), limit=5).records
    assert len(progress) == 1  # the one on_progress call became an observation
    # The latest rows of each output, as the UI shows them (bytes as text).
    assert preview_rows(instance, "kafka/clicks_enriched.topic")[0]["value"] == '{"url": "/home"}'
    assert preview_rows(instance, "delta/clicks_enriched.table") == [{"url": "/home", "__ts": 1000}]
    assert preview_rows(instance, "kafka/dead-letters.clicks_enriched.topic")[0]["value"] == \
        '{"reason": "bad JSON"}'
    assert preview_rows(instance, "delta/dead-letters.clicks_enriched.table") == []


@pytest.mark.parametrize("given, passed", [("", None), ("earliest", "earliest"), ("latest", "latest")])
def test_run_config_chooses_what_a_data_loss_does(project, engine, resources, instance, given, passed):
    """The Dagster side of the engine's on_data_loss: empty keeps the settings' policy (fail)."""
    config = {"ops": {"clicks_enriched": {"config": {"on_data_loss": given}}}}
    assert dg.materialize([build_assets(project, resources["engine"]).queries["clicks_enriched"]],
                          instance=instance, resources=resources, run_config=config).success
    assert engine.data_loss_policies == [passed]


EMPTY = ("clicks_enriched read no new records from clickstream, click_users (empty topics? "
         "`make ui` seeds the sample data)")


@pytest.mark.parametrize("input_rows, warnings", [(0, [EMPTY]), (10, [])],
                         ids=["read nothing", "read records"])
def test_a_run_that_read_nothing_says_so(project, engine, resources, instance, input_rows,
                                         warnings):
    """A run over empty topics (a first run before the samples are seeded) warns, naming the
    topics and how to seed them; a run that read records does not."""
    engine.input_rows = input_rows
    result = dg.materialize([build_assets(project, resources["engine"]).queries["clicks_enriched"]],
                            instance=instance, resources=resources)
    logged = [entry.user_message for entry in instance.all_logs(result.run_id)
              if entry.level == logging.WARNING]
    assert (result.success, logged) == (True, warnings)


@dataclass(frozen=True)
class ConfigCase:
    name: str
    config: dict
    call: tuple | None  # the engine call, None: the run fails before it


RUN_CONFIGS = [
    ConfigCase("continuous with a stop", {"mode": "continuous", "stop_after_s": 0.1},
               ("run", "clicks_enriched", "continuous")),
    ConfigCase("on data loss", {"on_data_loss": "earliest"},
               ("run", "clicks_enriched", "available_now", "earliest")),
    ConfigCase("bad mode", {"mode": "sometimes"}, None),
    ConfigCase("bad data-loss policy", {"on_data_loss": "ignore"}, None),
]


@pytest.mark.parametrize("case", RUN_CONFIGS, ids=lambda c: c.name)
def test_run_config_reaches_the_engine(project, engine, resources, instance, case):
    result = dg.materialize([build_assets(project, resources["engine"]).queries["clicks_enriched"]],
                            instance=instance, resources=resources, raise_on_error=False,
                            run_config={"ops": {"clicks_enriched": {"config": case.config}}})
    assert (result.success, engine.calls) == ((True, [case.call]) if case.call else (False, []))


def broken_file(project) -> BrokenFile:
    sql = "CREATE STREAM x AS SELECT * FROM a JOIN b ON a.id = b.id;"
    error = StreamJoinError("Stream-Stream joins must have a WITHIN clause",
                            "stream-stream-window", sql=sql, file="ksqldb/x.sql", start=33, end=33)
    return BrokenFile("x", "ksqldb", project.root / "ksqldb" / "x.sql", error)


def test_a_broken_file_is_a_failing_asset_beside_the_working_ones(project, engine, resources,
                                                                  instance):
    import dataclasses

    defs = build_definitions(dataclasses.replace(project, broken=(broken_file(project),)),
                             resources=resources)
    graph = defs.get_repository_def().asset_graph
    assert {"clicks_enriched", "products_rekeyed", "x"} <= \
        {k.to_user_string() for k in graph.get_all_asset_keys()}
    description = defs.get_assets_def("x").specs_by_key[dg.AssetKey("x")].description
    assert description.splitlines()[0] == \
        "ksqldb/x.sql:1:34: [stream-stream-window] Stream-Stream joins must have a WITHIN clause"
    result = dg.materialize([defs.get_assets_def("x")], instance=instance, raise_on_error=False)
    [failure] = [e for e in result.all_events if e.is_step_failure]
    assert failure.step_failure_data.user_failure_data.description.startswith("ksqldb/x.sql:1:34:")
    assert defs.resolve_job_def("stream_clicks_enriched").execute_in_process(
        instance=instance).success  # the working query still runs


def test_delta_root_of_the_engine_resource_is_where_tables_go(project, engine, instance,
                                                              tmp_path):
    """The Delta root configured on the resource (not the environment's) decides the table
    path the asset shows, the engine writes to and the materialization records."""
    root = tmp_path / "configured-root"
    resources = fake_resources(engine, delta_root=str(root))
    defs = build_definitions(project, resources=resources)
    table_key = dg.AssetKey(["delta", "clicks_enriched.table"])
    spec = defs.get_assets_def(table_key).specs_by_key[table_key]
    assert spec.metadata["path"].value == str(root / "clicks_enriched")
    assert defs.resolve_job_def("stream_clicks_enriched").execute_in_process(
        instance=instance).success
    assert engine.settings.delta_root == root  # the engine the run used
    assert latest_metadata(instance, dg.AssetKey("clicks_enriched"))["delta_path"] == \
        str(root / "clicks_enriched")
    assert latest_metadata(instance, table_key)["path"] == str(root / "clicks_enriched")


SECRET = "s3cret-pw-7f"


def test_the_sasl_password_reaches_the_engine_and_nothing_the_ui_shows(project, engine, instance,
                                                                      monkeypatch):
    """A SASL password given as an environment variable (`dg.EnvVar`) reaches the engine and is
    in nothing Dagster stores for its UI: not the run's config or tags, not an event or its
    metadata (a literal password in the resource config would be shown as config)."""
    monkeypatch.setenv("STREAMJOIN_TEST_SASL_PASSWORD", SECRET)
    resources = fake_resources(engine, security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                               sasl_username="alice", sasl_password=dg.EnvVar("STREAMJOIN_TEST_SASL_PASSWORD"))
    result = build_definitions(project, resources=resources).resolve_job_def(
        "stream_clicks_enriched").execute_in_process(instance=instance)
    assert result.success and engine.settings.sasl_password == SECRET
    run = instance.get_run_by_id(result.run_id)
    stored = [str(run.run_config), str(run.tags), *(str(entry) for entry in instance.all_logs(result.run_id))]
    assert len(stored) > 10 and not [text for text in stored if SECRET in text]
