"""Definitions over the hand-built Project with the fake engine, for driving the UI before (and
independently of) the compiler: the same factory, jobs and sensors as definitions.py."""

import os
from pathlib import Path

from definitions import build_definitions
from tests.platform.fixtures import FakeEngine, hand_project, install

install(FakeEngine())  # also runs in each run worker, which imports this file again
defs = build_definitions(hand_project(Path(os.environ["STREAMJOIN_HOME"])))
