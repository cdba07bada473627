"""The asset checks on a hand-built SqlProject with a fake engine: what each reports after a run,
that a check over no data (topics not created or empty, a run that read nothing) warns saying so
and never passes, that every check says what it proves, that the checks run with each
materialization whichever job launched it, and the streaming == batch comparison of the latest
closed window that holds data."""

from dataclasses import dataclass

import dagster as dg
import pytest

from assets import build_assets, build_checks
from definitions import build_definitions
from resources.platform import PlatformConfig
from tests.platform.fixtures import DAY_MS, FIRST_DAY_MS

pytestmark = pytest.mark.platform
OK, WARN, FAIL = "passed", "warning", "failed"
NO_DATA = "warning: no data"  # a warning whose message says there was nothing to judge

# End offsets of the join's inputs: {} = the topic does not exist; unlisted topics exist, empty.
REPARTITION = "clicks_enriched-clicks-repartition"
NOT_CREATED = {"clickstream": {}, "click_users": {}, REPARTITION: {}}
SEEDED = {"clickstream": {0: 3, 1: 2}, "click_users": {0: 1, 1: 1}}  # repartition topic empty


def verdict(evaluation) -> str:
    if evaluation.passed:
        return OK
    if evaluation.severity == dg.AssetCheckSeverity.ERROR:
        return FAIL
    said = evaluation.description or ""
    return NO_DATA if said.startswith("no data: ") and \
        evaluation.metadata["evaluated"].value == said else WARN


def query_checks(project, config, name):
    return [c for c in build_checks(project, config) if c.node_def.name == f"{name}_checks"]


@dataclass(frozen=True)
class CheckCase:
    name: str
    materialized: bool
    offsets: dict  # the input topics' end offsets (see NOT_CREATED)
    input_rows: int = 10  # what the run reports it read
    dead_letters: int = 0
    lag: int = 0
    rows: tuple = ()  # what the run streams into the Delta table
    expected: dict | None = None  # check name -> verdict


CHECKS = [
    CheckCase("before any run, no topic created yet", False, NOT_CREATED, expected={
        "copartitioned": NO_DATA, "consumer_lag_under_limit": NO_DATA,
        "no_dead_letters": NO_DATA, "streaming_equals_batch": NO_DATA, "live_status": WARN}),
    CheckCase("before any run, empty topics", False, {}, expected={
        "copartitioned": OK, "consumer_lag_under_limit": NO_DATA, "no_dead_letters": NO_DATA,
        "streaming_equals_batch": NO_DATA, "live_status": WARN}),
    CheckCase("sources seeded, repartition topic not created yet", False,
              {**SEEDED, REPARTITION: {}}, lag=5, expected={
                  "copartitioned": NO_DATA, "consumer_lag_under_limit": OK,
                  "no_dead_letters": NO_DATA, "streaming_equals_batch": NO_DATA,
                  "live_status": WARN}),
    CheckCase("a run over empty topics read nothing", True, {}, input_rows=0, expected={
        "copartitioned": OK, "consumer_lag_under_limit": NO_DATA, "no_dead_letters": NO_DATA,
        "streaming_equals_batch": NO_DATA, "live_status": OK}),
    CheckCase("a run that streamed rows of a closed day", True, SEEDED,
              rows=({"n": 1, "__ts": 5},), expected={
                  "copartitioned": OK, "consumer_lag_under_limit": OK, "no_dead_letters": OK,
                  "streaming_equals_batch": OK, "live_status": OK}),
    CheckCase("a run that read nothing new: caught up over earlier records", True, SEEDED,
              input_rows=0, expected={
                  "copartitioned": OK, "consumer_lag_under_limit": OK,
                  "no_dead_letters": NO_DATA, "streaming_equals_batch": NO_DATA,
                  "live_status": OK}),
    CheckCase("a run that read nothing, yet dead letters (of its repartition step)", True,
              SEEDED, input_rows=0, dead_letters=2, expected={
                  "copartitioned": OK, "consumer_lag_under_limit": OK, "no_dead_letters": FAIL,
                  "streaming_equals_batch": NO_DATA, "live_status": OK}),
    CheckCase("dead letters and lag over the limit", True, SEEDED, dead_letters=4, lag=101,
              expected={"copartitioned": OK, "consumer_lag_under_limit": WARN,
                        "no_dead_letters": FAIL, "streaming_equals_batch": NO_DATA,
                        "live_status": WARN}),
]


@pytest.mark.parametrize("case", CHECKS, ids=lambda c: c.name)
def test_checks(project, engine, resources, instance, case):
    engine.dead_letters, engine.lag, engine.rows = case.dead_letters, case.lag, list(case.rows)
    engine.input_rows, engine.offsets = case.input_rows, case.offsets
    config = PlatformConfig(max_consumer_lag=100)
    query = build_assets(project, resources["engine"]).queries["clicks_enriched"]
    checks = query_checks(project, config, "clicks_enriched")
    if case.materialized:
        dg.materialize([query], instance=instance, resources=resources)
    result = dg.materialize([query, *checks], instance=instance, resources=resources,
                            selection=dg.AssetSelection.checks_for_assets(query))
    assert {e.check_name: verdict(e) for e in result.get_asset_check_evaluations()} == \
        case.expected


@dataclass(frozen=True)
class NoDataCase:
    offsets: dict
    check: str
    said: str  # in the warning's message


NO_DATA_MESSAGES = [
    NoDataCase(NOT_CREATED, "copartitioned", "clickstream, click_users, "
                                             f"{REPARTITION} not created yet"),
    NoDataCase({**SEEDED, REPARTITION: {}}, "copartitioned", f": {REPARTITION} not created yet"),
    NoDataCase(NOT_CREATED, "consumer_lag_under_limit",
               "no records on the input topics yet: clickstream (not created), "
               "click_users (not created)"),
    NoDataCase({}, "consumer_lag_under_limit", "clickstream (empty), click_users (empty)"),
    NoDataCase({}, "no_dead_letters", "not materialized yet"),
]


@pytest.mark.parametrize("case", NO_DATA_MESSAGES, ids=lambda c: f"{c.check}: {c.said}")
def test_no_data_warnings_say_what_is_missing(project, engine, resources, instance, case):
    engine.offsets = case.offsets
    checks = query_checks(project, PlatformConfig(), "clicks_enriched")
    result = dg.materialize(checks, instance=instance, resources=resources,
                            selection=dg.AssetSelection.checks(
                                dg.AssetCheckKey(dg.AssetKey("clicks_enriched"), case.check)))
    [evaluation] = result.get_asset_check_evaluations()
    assert (verdict(evaluation), case.said in evaluation.description) == (NO_DATA, True), \
        evaluation.description


def test_every_check_says_what_it_proves(project):
    specs = [spec for checks in build_checks(project, PlatformConfig())
             for spec in checks.check_specs]
    assert len(specs) == 9  # 5 on the join, 4 on the PARTITION BY query (nothing to co-partition)
    assert all(spec.description and len(spec.description) > 60 for spec in specs)


@pytest.mark.parametrize("job", ["stream_clicks_enriched", "start_clicks_enriched"])
def test_jobs_run_the_checks_with_the_materialization(project, engine, resources, instance, job):
    """The jobs the sensors and the UI launch select the checks: none is left "not evaluated"."""
    engine.rows = [{"n": 1, "__ts": 5}]
    defs = build_definitions(project, resources=resources)
    config = {"ops": {"clicks_enriched": {"config": {"mode": "continuous", "stop_after_s": 0.1}}}} \
        if job.startswith("start") else None
    result = defs.resolve_job_def(job).execute_in_process(instance=instance, run_config=config)
    evaluated = {e.check_name for e in result.get_asset_check_evaluations()}
    assert evaluated == {"copartitioned", "consumer_lag_under_limit", "no_dead_letters",
                         "streaming_equals_batch", "live_status"}


@dataclass(frozen=True)
class ReplayCase:
    name: str
    streamed: list[dict]  # rows in the window before the check
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
    """The check compares the Delta rows of the latest closed window holding data (here a day
    before a newer, still open one) before and after the batch recomputation."""
    import pyarrow as pa
    from deltalake import write_deltalake

    spec = project.query("clicks_enriched")

    def table(rows, start_ms=FIRST_DAY_MS):
        return pa.Table.from_pylist([{**row, "__ts": start_ms + i} for i, row in enumerate(rows)])

    path = resources["engine"].delta_path(spec)  # under the resource's delta root
    write_deltalake(path, table(case.streamed))
    write_deltalake(path, table([{"k": "z", "n": 0}], 4_000_000_000_000), mode="append")  # 2096
    engine.on_backfill = lambda query: write_deltalake(
        path, pa.concat_tables([table(case.batch), table([{"k": "z", "n": 0}], 4_000_000_000_000)]),
        mode="overwrite")
    checks = query_checks(project, PlatformConfig(), "clicks_enriched")
    result = dg.materialize(checks, instance=instance, resources=resources,
                            selection=dg.AssetSelection.checks(
                                dg.AssetCheckKey(dg.AssetKey("clicks_enriched"),
                                                 "streaming_equals_batch")))
    [evaluation] = result.get_asset_check_evaluations()
    assert evaluation.passed == case.passed
    assert (evaluation.metadata["delta_path"].value, evaluation.metadata["window_start_ms"].value,
            evaluation.metadata["window_end_ms"].value) == (path, FIRST_DAY_MS,
                                                            FIRST_DAY_MS + DAY_MS)
    assert ("backfill", "clicks_enriched", FIRST_DAY_MS, FIRST_DAY_MS + DAY_MS) in engine.calls
