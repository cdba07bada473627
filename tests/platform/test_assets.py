"""The asset factory and definitions on a hand-built SqlProject with a fake engine (the Dagster
layer alone): lineage, descriptions, code versions, metadata of a materialization, checks, and
the Delta root configured on the engine resource."""

from dataclasses import dataclass

import dagster as dg
import pytest

from assets import build_assets, build_checks
from assets.keys import latest_metadata, recorded_fingerprint
from definitions import build_definitions
from resources import default_resources
from resources.platform import PlatformConfig
from tests.platform.fixtures import fake_resources

pytestmark = pytest.mark.platform


@dataclass(frozen=True)
class Case:
    asset: str
    parents: set[str]


# source topic -> repartition topic -> join -> output topic / Delta table; the repartition topic
# hangs below the source it re-keys (Query.repartition_inputs), the table joins directly.
LINEAGE = [
    Case("kafka/clickstream", set()),
    Case("kafka/clicks_enriched-clicks-repartition", {"kafka/clickstream"}),
    Case("clicks_enriched", {"kafka/clicks_enriched-clicks-repartition", "kafka/click_users"}),
    Case("kafka/clicks_enriched", {"clicks_enriched"}),
    Case("delta/clicks_enriched", {"clicks_enriched"}),
    Case("products_rekeyed", {"kafka/products"}),
    Case("kafka/products_rekeyed", {"products_rekeyed"}),
]


@pytest.mark.parametrize("case", LINEAGE, ids=lambda c: c.asset)
def test_lineage(project, case):
    graph = build_definitions(project).get_repository_def().asset_graph
    node = graph.get(dg.AssetKey.from_user_string(case.asset))
    assert {p.to_user_string() for p in node.parent_keys} == case.parents


def test_query_asset_carries_sql_explain_code_version_and_group(project):
    spec = project.query("clicks_enriched")
    assets_def = build_assets(project, default_resources()["engine"]).queries["clicks_enriched"]
    key = dg.AssetKey("clicks_enriched")
    description = assets_def.specs_by_key[key].description
    assert spec.sql in description and "Repartition[clicks by userId]" in description
    assert assets_def.code_versions_by_key[key] == spec.code_version
    assert {s.group_name for s in assets_def.specs} == {"ksqldb"}


def test_materialize_records_numeric_metadata_and_fingerprint(project, engine, resources,
                                                             instance):
    result = dg.materialize([build_assets(project, resources["engine"]).queries["clicks_enriched"]],
                            instance=instance, resources=resources)
    assert result.success
    assert engine.calls == [("run", "clicks_enriched", "available_now")]
    metadata = latest_metadata(instance, dg.AssetKey("clicks_enriched"))
    assert {k: metadata[k] for k in ("input_rows", "output_rows", "dead_letters",
                                     "late_records", "dropped_records", "watermark_ms")} == \
        {"input_rows": 10, "output_rows": 7, "dead_letters": 0, "late_records": 1,
         "dropped_records": 2, "watermark_ms": 1_000}
    table = latest_metadata(instance, dg.AssetKey(["delta", "clicks_enriched"]))
    assert table["delta_version"] == 3
    assert recorded_fingerprint(instance, dg.AssetKey("clicks_enriched")) == \
        project.query("clicks_enriched").state_fingerprint
    progress = instance.fetch_observations(dg.AssetKey("clicks_enriched"), limit=5).records
    assert len(progress) == 1  # the one on_progress call became an observation


@pytest.mark.parametrize("given, passed", [("", None), ("earliest", "earliest"), ("latest", "latest")])
def test_run_config_chooses_what_a_data_loss_does(project, engine, resources, instance, given, passed):
    """The Dagster side of the engine's on_data_loss: empty keeps the settings' policy (fail)."""
    config = {"ops": {"clicks_enriched": {"config": {"on_data_loss": given}}}}
    assert dg.materialize([build_assets(project, resources["engine"]).queries["clicks_enriched"]],
                          instance=instance, resources=resources, run_config=config).success
    assert engine.data_loss_policies == [passed]


def test_an_unknown_data_loss_policy_fails_the_run(project, engine, resources, instance):
    config = {"ops": {"clicks_enriched": {"config": {"on_data_loss": "ignore"}}}}
    result = dg.materialize([build_assets(project, resources["engine"]).queries["clicks_enriched"]],
                            instance=instance, resources=resources, run_config=config,
                            raise_on_error=False)
    assert not result.success and engine.calls == []


def test_materialize_in_continuous_mode_passes_mode_and_stop(project, engine, resources,
                                                            instance):
    config = {"ops": {"clicks_enriched": {"config": {"mode": "continuous", "stop_after_s": 5}}}}
    assert dg.materialize([build_assets(project, resources["engine"]).queries["clicks_enriched"]],
                          instance=instance, resources=resources, run_config=config).success
    assert engine.calls == [("run", "clicks_enriched", "continuous")]


@dataclass(frozen=True)
class CheckCase:
    dead_letters: int
    lag: int
    expected: dict  # check name -> passed


CHECKS = [
    CheckCase(dead_letters=0, lag=0,
              expected={"copartitioned": True, "consumer_lag_under_limit": True,
                        "no_dead_letters": True, "streaming_equals_batch": True}),
    CheckCase(dead_letters=4, lag=101,  # limit 100
              expected={"copartitioned": True, "consumer_lag_under_limit": False,
                        "no_dead_letters": False, "streaming_equals_batch": True}),
]


def query_checks(project, config, name):
    return [c for c in build_checks(project, config) if c.node_def.name == f"{name}_checks"]


@pytest.mark.parametrize("case", CHECKS)
def test_checks_after_a_run(project, engine, resources, instance, case):
    engine.dead_letters, engine.lag = case.dead_letters, case.lag
    config = PlatformConfig(max_consumer_lag=100)
    query = build_assets(project, resources["engine"]).queries["clicks_enriched"]
    checks = query_checks(project, config, "clicks_enriched")
    dg.materialize([query], instance=instance, resources=resources)
    result = dg.materialize([query, *checks], instance=instance, resources=resources,
                            selection=dg.AssetSelection.checks_for_assets(query))
    evaluations = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert evaluations == case.expected


@dataclass(frozen=True)
class ReplayCase:
    name: str
    streamed: list[dict]  # rows in the last closed window before the check
    batch: list[dict]  # what the (fake) backfill writes for that window
    passed: bool


REPLAYS = [
    ReplayCase("equal", [{"k": "a", "n": 1}, {"k": "a", "n": 1}],
               [{"k": "a", "n": 1}, {"k": "a", "n": 1}], True),
    ReplayCase("streaming lost a duplicate", [{"k": "a", "n": 1}],
               [{"k": "a", "n": 1}, {"k": "a", "n": 1}], False),
    ReplayCase("different value", [{"k": "a", "n": 1}], [{"k": "a", "n": 2}], False),
]


@pytest.mark.parametrize("case", REPLAYS, ids=lambda c: c.name)
def test_streaming_equals_batch_check(project, engine, resources, instance, case):
    """The check compares the window's Delta rows before and after the batch recomputation."""
    from deltalake import write_deltalake
    import pyarrow as pa

    spec = project.query("clicks_enriched")
    config = PlatformConfig()
    window = config.backfill_partitions().get_last_partition_window()
    start_ms = int(window.start.timestamp() * 1000)

    def table(rows):
        return pa.Table.from_pylist([{**row, "__ts": start_ms + i} for i, row in enumerate(rows)])

    path = resources["engine"].delta_path(spec)  # under the resource's delta root
    write_deltalake(path, table(case.streamed))
    engine.on_backfill = lambda query: write_deltalake(engine.delta_path(query), table(case.batch),
                                                       mode="overwrite")
    checks = query_checks(project, config, "clicks_enriched")
    result = dg.materialize(checks, instance=instance, resources=resources,
                            selection=dg.AssetSelection.checks(
                                dg.AssetCheckKey(dg.AssetKey("clicks_enriched"),
                                                 "streaming_equals_batch")))
    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.passed == case.passed
    assert evaluation.metadata["delta_path"].value == path


def test_delta_root_of_the_engine_resource_is_where_tables_go(project, engine, instance,
                                                              tmp_path):
    """The Delta root configured on the resource (not the environment's) decides the table
    path the asset shows, the engine writes to and the materialization records."""
    root = tmp_path / "configured-root"
    resources = fake_resources(engine, delta_root=str(root))
    defs = build_definitions(project, resources=resources)
    table_key = dg.AssetKey(["delta", "clicks_enriched"])
    spec = defs.get_assets_def(table_key).specs_by_key[table_key]
    assert spec.metadata["path"].value == str(root / "clicks_enriched")
    assert defs.resolve_job_def("stream_clicks_enriched").execute_in_process(
        instance=instance).success
    assert engine.settings.delta_root == root  # the engine the run used
    assert latest_metadata(instance, dg.AssetKey("clicks_enriched"))["delta_path"] == \
        str(root / "clicks_enriched")
    assert latest_metadata(instance, table_key)["path"] == str(root / "clicks_enriched")


def test_broken_query_fails_definition_loading_with_its_position(monkeypatch, tmp_path):
    """A load error is never swallowed into a missing asset: the loader's error propagates."""
    from streamjoin.dialect.errors import StreamJoinError
    import definitions

    sql = "CREATE STREAM x AS SELECT * FROM a JOIN b ON a.id = b.id;"

    def broken(sql_dir):
        raise StreamJoinError("Stream-Stream joins must have a WITHIN clause",
                              "stream-stream-window", sql=sql, file="x.sql", start=33, end=33)

    monkeypatch.setattr(definitions, "load_project", broken)
    with pytest.raises(StreamJoinError, match=r"x\.sql:1:34: \[stream-stream-window\]"):
        definitions.defs()
