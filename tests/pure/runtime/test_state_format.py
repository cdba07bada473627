"""A task checkpoints its runtime pickled, so the fields of every class a runtime holds are part
of the checkpoint format (`STATE_FORMAT`). This test keeps the layout those classes had when the
format was last bumped (`state_layout.json`) and fails when it changes without a bump: a
checkpoint written before the change would otherwise be read into the new classes (a binding
without the field the new code reads sent every record to the dead letters).

The layout: every dataclass and named tuple defined in the packages a runtime is built from,
with its fields; and the attributes of every other streamjoin object reachable from a fresh
runtime of each accepted conformance query.

After a deliberate change: bump STATE_FORMAT, then record the layout anew with
`STREAMJOIN_RECORD_STATE_LAYOUT=1 .venv/bin/python -m pytest tests/pure/runtime/test_state_format.py`.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import pkgutil
import types
from pathlib import Path

from streamjoin.runner.cases import load_cases
from streamjoin.runner.planned import plan_case
from streamjoin.runtime.contract import STATE_FORMAT
from tests.paths import CONFORMANCE

RECORDED = Path(__file__).with_name("state_layout.json")
PACKAGES = ("streamjoin.operators", "streamjoin.runtime", "streamjoin.expr", "streamjoin.serde")
# Named tuples that live only while a fast path takes a run, never in a runtime: its fast paths
# are dropped when it is pickled (`PipelineRuntime.__getstate__`).
# `test_transient_classes_never_reach_a_checkpoint` holds that. And what only a spec's codec holds,
# which a pickled spec leaves out (`SerdeSpec.__getstate__`): a registry format's runs.
TRANSIENT = frozenset({"streamjoin.runtime.run_sink.Columns", "streamjoin.runtime.sides.SideInput",
                       "streamjoin.serde.registry_formats.RunFormat"})


def declared_layouts() -> dict[str, list[str]]:
    """Fields of the dataclasses and named tuples the runtime packages define."""
    layouts = {}
    for package_name in PACKAGES:
        package = importlib.import_module(package_name)
        for info in pkgutil.iter_modules(package.__path__, package_name + "."):
            module = importlib.import_module(info.name)
            for value in vars(module).values():
                if not isinstance(value, type) or value.__module__ != module.__name__:
                    continue
                if _name(value) in TRANSIENT:
                    continue
                if dataclasses.is_dataclass(value):
                    layouts[_name(value)] = [f.name for f in dataclasses.fields(value)]
                elif issubclass(value, tuple) and hasattr(value, "_fields"):
                    layouts[_name(value)] = list(value._fields)
    return layouts


def reachable_layouts(root: object, layouts: dict[str, list[str]]) -> None:
    """Attributes of the streamjoin objects reachable from `root` (through attributes, containers
    and closures), added to `layouts`."""
    seen, todo = set(), [root]
    while todo:
        obj = todo.pop()
        if id(obj) in seen or isinstance(obj, (str, bytes, int, float, bool, type(None), type)):
            continue
        seen.add(id(obj))
        if isinstance(obj, dict):
            todo += [*obj.keys(), *obj.values()]
        elif isinstance(obj, (list, tuple, set, frozenset)):
            todo += list(obj)
        elif isinstance(obj, types.FunctionType):
            todo += [cell.cell_contents for cell in obj.__closure__ or () if _filled(cell)]
            todo += list(obj.__defaults__ or ())
        elif type(obj).__module__.startswith("streamjoin."):
            attributes = getattr(obj, "__dict__", None)
            if attributes is not None:
                layouts.setdefault(_name(type(obj)), sorted(attributes))
                todo += list(attributes.values())


def current_layout() -> dict[str, list[str]]:
    layouts = declared_layouts()
    for case in load_cases([CONFORMANCE]):
        if case.expect_error is None:
            for query in plan_case(case, topic_prefix="layout.").queries:
                reachable_layouts(query.factory(0), layouts)
    return dict(sorted(layouts.items()))


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a closure cell not assigned yet
        return False
    return True


def test_the_checkpoint_layout_changes_only_with_the_state_format():
    layout = current_layout()
    if os.environ.get("STREAMJOIN_RECORD_STATE_LAYOUT") == "1":
        RECORDED.write_text(json.dumps({"state_format": STATE_FORMAT, "classes": layout}, indent=1) + "\n")
    recorded = json.loads(RECORDED.read_text())
    if recorded["state_format"] != STATE_FORMAT:
        raise AssertionError(f"STATE_FORMAT is {STATE_FORMAT} but the layout was recorded for format "
                             f"{recorded['state_format']}: record it anew (see the module docstring)")
    changed = sorted(name for name in layout.keys() | recorded["classes"].keys()
                     if layout.get(name) != recorded["classes"].get(name))
    assert not changed, (f"the checkpointed classes changed without a STATE_FORMAT bump: {changed[:10]}; "
                         "bump it and record the layout anew (see the module docstring)")


def test_transient_classes_never_reach_a_checkpoint():
    """A runtime that took runs through each kind of fast path pickles (as the Spark adapter
    checkpoints it) without any of the TRANSIENT classes."""
    import random

    from pyspark import cloudpickle

    from tests.pure.runtime import test_lookup, test_upserts, test_within

    for module, make_rows in ((test_lookup, test_lookup.changelog), (test_within, test_within.inputs),
                              (test_upserts, test_upserts.updates)):
        for case in module.CASES:
            runtime = test_lookup.runtimes(case)[0]
            assert runtime.fast_paths, case.name
            list(runtime.process_all(make_rows(case, runtime, random.Random(0), 300)))
            pickled = cloudpickle.dumps(runtime)
            assert not [name for name in TRANSIENT if name.rsplit(".", 1)[1].encode() in pickled], case.name
