"""Load a `sql/` folder: each folder's `sources.sql` declares its inputs, every other `.sql` file
is one query (one asset). A file's flavour comes from a first-line `-- dialect: X` comment,
else from its folder's name when that is a flavour, else ksqlDB. Header comments `-- mode:`
and `-- schedule:` set the run mode and a repartition job's cron."""

from __future__ import annotations

import re
from pathlib import Path

from streamjoin.catalog import Catalog
from streamjoin.config import Settings
from streamjoin.dialect import FLAVOURS, declared_flavour
from streamjoin.plan import explain, plan_program
from streamjoin.plan import nodes as P
from streamjoin.project import Project, QuerySpec, SourceSpec
from streamjoin.topology import CompiledQuery, split_repartitions, walk

SOURCES_FILE = "sources.sql"
_HEADER = re.compile(r"^--\s*(mode|schedule)\s*:\s*(.+?)\s*$", re.I | re.M)


def folder_flavour(folder: Path, text: str) -> str:
    return declared_flavour(text, folder.name.lower() if folder.name.lower() in FLAVOURS else "ksqldb")


def folder_catalog(folder: Path) -> Catalog:
    """The sources declared in `folder/sources.sql` (empty when there is none)."""
    path = folder / SOURCES_FILE
    if not path.exists():
        return Catalog()
    text = path.read_text()
    return plan_program(text, Catalog(), folder_flavour(folder, text), file=str(path)).catalog


def compile_file(path: Path) -> list[CompiledQuery]:
    """The file's queries as sub-topologies, upstream (repartitions) first. Raises the planner's
    positioned error for a broken file."""
    text = path.read_text()
    flavour = folder_flavour(path.parent, text)
    program = plan_program(text, folder_catalog(path.parent), flavour, file=str(path))
    if not program.queries:
        raise ValueError(f"{path}: holds no query (declare inputs in {SOURCES_FILE})")
    return [CompiledQuery(sub, flavour) for q in program.queries for sub in split_repartitions(q.root)]


def load_project(sql_dir: Path) -> Project:
    sql_dir = Path(sql_dir).resolve()
    settings = Settings.from_env()
    sources: dict[str, SourceSpec] = {}
    queries = []
    for path in sorted(sql_dir.rglob("*.sql")):
        if path.name == SOURCES_FILE:
            for s in folder_catalog(path.parent):
                sources[s.topic] = SourceSpec(s.name, s.kind, s.topic, s.partitions or 1)
            continue
        queries.append(_query_spec(sql_dir, path, settings))
    return Project(sql_dir, tuple(sources.values()), tuple(queries))


def _query_spec(sql_dir: Path, path: Path, settings: Settings) -> QuerySpec:
    text = path.read_text()
    compiled = compile_file(path)
    main = compiled[-1]
    headers = {k.lower(): v for k, v in _HEADER.findall(text)}
    inputs = [n.source for q in compiled for n in walk(q.sink) if isinstance(n, P.Source)]
    internal = {q.sink.topic for q in compiled[:-1]}
    group = path.parent.relative_to(sql_dir).as_posix().replace("/", "_") if path.parent != sql_dir else "default"
    is_repartition = any(isinstance(n, P.Repartition) and n.reason == "PARTITION BY" for n in walk(main.sink))
    return QuerySpec(
        name=path.stem, group=group, path=path, sql=text, dialect=compiled[-1].dialect,
        explain="\n\n".join(explain(q.sink) for q in compiled),
        source_names=tuple(dict.fromkeys(s.name for s in inputs if s.topic not in internal)),
        source_topics=tuple(dict.fromkeys(s.topic for s in inputs if s.topic not in internal)),
        repartition_topics=tuple(sorted(internal)), output_topic=main.sink.topic, output_kind=main.sink.kind,
        delta_path=str(settings.delta_root / path.stem), mode=headers.get("mode", "available_now"),
        schedule=headers.get("schedule"), is_repartition=is_repartition and len(inputs) == 1,
        repartition_inputs=tuple((q.sink.topic, q.input_topics) for q in compiled[:-1]))
