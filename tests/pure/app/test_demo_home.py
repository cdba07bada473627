"""`make demo` / `streamjoin demo` keep their state apart from `make ui`'s home unless told which
home to use: the demo's checkpoints made the UI's first run read nothing (issue 40)."""

from dataclasses import dataclass
from pathlib import Path

import pytest

from streamjoin.app.samples import demo_settings
from streamjoin.settings import Settings


@dataclass(frozen=True)
class Case:
    env: dict
    home: Path


CASES = [
    Case({}, Path("var/demo").resolve()),
    Case({"STREAMJOIN_HOME": "/tmp/mine"}, Path("/tmp/mine")),
]


@pytest.mark.parametrize("case", CASES, ids=["default: its own home", "a home named: that one"])
def test_demo_home(case):
    assert demo_settings(case.env).home == case.home


def test_demo_home_is_not_the_uis():
    assert demo_settings({}).home != Settings.from_env({}).home


def test_demo_tables_under_its_home():
    assert demo_settings({}).delta_root == Path("var/demo/delta").resolve()
