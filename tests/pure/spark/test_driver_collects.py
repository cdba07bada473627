"""Where the driver may take rows from Spark on the data path: only the tasks' figures rows
(`query.task_figures`, counted as the report's `driver_rows`; a backfill's figures rows) and the
Delta table's version (one metadata row). Every call that brings rows to the driver
(collect, toArrow, toPandas, take, first, head, toLocalIterator) is listed here by the function
that makes it, so a result row travelling to the driver again fails this test, and the
integration test `test_sinks_off_the_driver.py` holds the figure to the task count."""

from __future__ import annotations

import ast
from pathlib import Path

import streamjoin

PACKAGE = Path(streamjoin.__file__).parent
COLLECTING = {"collect", "toArrow", "toPandas", "take", "first", "head", "toLocalIterator", "tail"}
ALLOWED = {  # module -> the functions allowed to collect, and why
    "spark/query.py": {"task_figures"},  # one figures row per task and batch
    "spark/batch.py": {"backfill",  # one figures row per task
                       "run_batch"},  # the streaming == batch check, not the data path
    "spark/delta_writes.py": {"version"},  # the table's latest version
    "app/outputs.py": set(),
    "app/engine.py": set(),
    "spark/task_sink.py": set(),
}


def collecting_functions(path: Path) -> set[str]:
    found = set()
    for function in ast.walk(ast.parse(path.read_text())):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in COLLECTING):
                    found.add(function.name)
    return found


def test_only_figures_and_metadata_rows_reach_the_driver():
    found = {module: collecting_functions(PACKAGE / module) for module in ALLOWED}
    assert found == ALLOWED
