"""Definitions over the hand-built SqlProject with the fake engine, for driving the UI before (and
independently of) the compiler: the same factory, jobs and sensors as definitions.py, with an
`engine` resource that hands out the fake."""

import os
from pathlib import Path

from definitions import build_definitions
from tests.platform.fixtures import FakeEngine, fake_resources, hand_project

HOME = Path(os.environ["STREAMJOIN_HOME"])
# Each run worker imports this file again: it gets its own fake.
defs = build_definitions(hand_project(HOME), resources=fake_resources(FakeEngine()))
