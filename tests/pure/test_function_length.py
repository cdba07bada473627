"""No function of the engine or the Dagster layer is longer than the project's hard limit (60
lines, decorators and docstring included): a longer one is split into steps a reader can name."""

from __future__ import annotations

import ast

import pytest

from tests.paths import REPO

LIMIT = 60
ROOTS = ("streamjoin", "assets", "jobs", "resources")


def long_functions(source: str, name: str) -> list[str]:
    """`name:line function (n lines)` for each function of `source` over LIMIT lines."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            lines = node.end_lineno - first + 1
            if lines > LIMIT:
                found.append(f"{name}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_is_over_the_limit():
    paths = [p for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))] + [REPO / "definitions.py"]
    assert [f for p in paths for f in long_functions(p.read_text(), str(p.relative_to(REPO)))] == []


BODY = "    x = 1\n"


@pytest.mark.parametrize("source, expected", [
    ("def f():\n" + BODY * (LIMIT - 1), []),
    ("def f():\n" + BODY * LIMIT, ["m.py:1 f (61 lines)"]),
    ("@decorated\ndef f():\n" + BODY * (LIMIT - 1), ["m.py:2 f (61 lines)"]),
    ("class C:\n    def g(self):\n" + "        x = 1\n" * LIMIT, ["m.py:2 g (61 lines)"]),
], ids=["at the limit", "one over", "decorator counts", "a method"])
def test_the_check_counts_lines_as_written(source, expected):
    assert long_functions(source, "m.py") == expected
