"""The shape of the code, as docs/architecture.md draws it: the engine's packages form a one-way
chain (each imports only packages before it), no module takes part in an import cycle, and the
Dagster layer (assets/, jobs/, resources/, definitions.py) imports only `streamjoin.app` and
`streamjoin.settings` of the engine. Imports inside functions and under TYPE_CHECKING count.

The chain is read from the diagram in docs/architecture.md, so the document and this test agree."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import REPO

DAGSTER_LAYER = ("assets", "jobs", "resources", "definitions.py")
# What the Dagster layer may import of the engine: the facade, and the settings it reads from
# the environment once, as every entry point does (docs/architecture.md).
DAGSTER_MAY_IMPORT = ("streamjoin.app", "streamjoin.settings")


def chain() -> list[set[str]]:
    """The engine's layers in order, from the diagram's first line: `a ─▶ b, c ─▶ d`."""
    text = (REPO / "docs" / "architecture.md").read_text()
    line = next(line for line in text.splitlines() if "─▶" in line)
    return [{name.strip() for name in layer.split(",")} for layer in line.split("─▶")]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, module: str, is_package: bool, known: set[str]) -> set[str]:
    """The modules `source` (the text of `module`) imports, anywhere in it: `from p import m`
    names module p.m where that is a module, else p."""
    found = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return found


def import_graph(sources: dict[str, tuple[str, bool]]) -> dict[str, set[str]]:
    """module -> the modules of `sources` it imports; `sources`: module -> (text, is a package)."""
    known = set(sources)
    return {module: {m for m in imported(text, module, is_package, known) if m in known and m != module}
            for module, (text, is_package) in sources.items()}


def layer_of(module: str, layers: list[set[str]]) -> int | None:
    """The index in the chain of an engine module's package (or top-level module)."""
    parts = module.split(".")
    if parts[0] != "streamjoin" or len(parts) == 1:
        return None
    return next((i for i, layer in enumerate(layers) if parts[1] in layer), None)


def upward_imports(graph: dict[str, set[str]], layers: list[set[str]]) -> list[str]:
    """Each engine import of a later layer than the importer's, as `importer -> imported`."""
    return sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                  if (mine := layer_of(module, layers)) is not None
                  and (theirs := layer_of(target, layers)) is not None and theirs > mine)


def dagster_reaches(graph: dict[str, set[str]]) -> list[str]:
    """Each import of the engine by the Dagster layer past `DAGSTER_MAY_IMPORT`."""
    return sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                  if not module.startswith("streamjoin") and target.startswith("streamjoin")
                  and not any(target == allowed or target.startswith(allowed + ".") for allowed in DAGSTER_MAY_IMPORT))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles: each strongly connected set of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in sorted(graph.get(module, ())):
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while not component or component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def project_sources() -> dict[str, tuple[str, bool]]:
    paths = [*(REPO / "streamjoin").rglob("*.py")]
    for part in DAGSTER_LAYER:
        paths += [REPO / part] if part.endswith(".py") else [*(REPO / part).rglob("*.py")]
    return {module_name(p, REPO): (p.read_text(), p.name == "__init__.py") for p in paths}


GRAPH = import_graph(project_sources())
LAYERS = chain()


def test_every_engine_package_has_its_place_in_the_chain():
    packages = {m.split(".")[1] for m in GRAPH if m.startswith("streamjoin.")} - {"__main__"}
    assert sorted(packages - set().union(*LAYERS)) == [], "add it to the chain in docs/architecture.md"


def test_no_engine_module_imports_a_later_layer():
    assert upward_imports(GRAPH, LAYERS) == []


def test_the_dagster_layer_imports_only_the_app_and_settings_of_the_engine():
    assert dagster_reaches(GRAPH) == []


def test_no_import_cycles():
    assert cycles(GRAPH) == []


@dataclass(frozen=True)
class Case:
    name: str
    sources: dict[str, str]  # module -> text (a name ending in `.__init__` is a package)
    upward: list[str]
    dagster: list[str]
    cycles: list[list[str]]


CASES = [
    Case("a plain downward import", {"streamjoin.plan.a": "from streamjoin.dialect import b",
                                     "streamjoin.dialect.b": ""}, [], [], []),
    Case("an upward import inside a function",
         {"streamjoin.plan.a": "def f():\n    from streamjoin.runtime.b import x",
          "streamjoin.runtime.b": "from streamjoin.plan import a"},
         ["streamjoin.plan.a -> streamjoin.runtime.b"], [], [["streamjoin.plan.a", "streamjoin.runtime.b"]]),
    Case("an upward import under TYPE_CHECKING",
         {"streamjoin.serde.a": "if TYPE_CHECKING:\n    import streamjoin.spark.b", "streamjoin.spark.b": ""},
         ["streamjoin.serde.a -> streamjoin.spark.b"], [], []),
    Case("a relative import within a package makes a cycle",
         {"streamjoin.runtime.task": "from .lookup import L", "streamjoin.runtime.lookup": "from . import task"},
         [], [], [["streamjoin.runtime.lookup", "streamjoin.runtime.task"]]),
    Case("the Dagster layer past the app",
         {"assets.state": "from streamjoin.app.engine import E\nfrom streamjoin.kafka.offsets import D\n"
                          "from streamjoin.settings import S",
          "streamjoin.app.engine": "", "streamjoin.kafka.offsets": "", "streamjoin.settings": ""},
         [], ["assets.state -> streamjoin.kafka.offsets"], []),
]


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_the_checks_find_what_they_look_for(case: Case):
    sources = {m.removesuffix(".__init__"): (text, m.endswith(".__init__")) for m, text in case.sources.items()}
    graph = import_graph(sources)
    layers = [{"settings"}, {"dialect"}, {"plan"}, {"serde"}, {"runtime"}, {"kafka"}, {"spark"}, {"app"}]
    assert (upward_imports(graph, layers), dagster_reaches(graph), cycles(graph)) == \
        (case.upward, case.dagster, case.cycles)
