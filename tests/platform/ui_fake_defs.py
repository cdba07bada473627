"""Definitions over the hand-built SqlProject with the fake engine, for driving the UI before (and
independently of) the compiler: the same factory, jobs and sensors as definitions.py, with an
`engine` resource that hands out the fake. Four more joins (copies of clicks_enriched) make the
queue visible when the launch sensor starts everything at once; the source topics hold records and
each fake run takes a few seconds and streams a row into its Delta table, so every check has data
to judge (over none they would warn, not pass)."""

import dataclasses
import os
from pathlib import Path

from definitions import build_definitions
from tests.platform.fixtures import (
    FIRST_DAY_MS,
    FakeEngine,
    fake_resources,
    hand_project,
)

HOME = Path(os.environ["STREAMJOIN_HOME"])
RUN_S = float(os.environ.get("UI_FAKE_RUN_S", "3"))


def with_copies(project, copies: int):
    join = project.query("clicks_enriched")
    extra = [dataclasses.replace(join, name=f"clicks_enriched_{i}", repartition_topics=(),
                                 repartition_inputs=(), output_topic=f"clicks_enriched_{i}")
             for i in range(2, 2 + copies)]
    return dataclasses.replace(project, queries=(*project.queries, *extra))


# Each run worker imports this file again: it gets its own fake.
defs = build_definitions(with_copies(hand_project(HOME), 4), resources=fake_resources(
    FakeEngine(rows=[{"url": "/home", "__ts": FIRST_DAY_MS}], run_s=RUN_S,
               offsets={"clickstream": {0: 3, 1: 2}, "click_users": {0: 1, 1: 1},
                        "products": {0: 4}})))
