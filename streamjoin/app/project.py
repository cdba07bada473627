"""Load a `sql/` folder into `Query` objects: each folder's `sources.sql` declares its inputs, every
other `.sql` file is one query (one asset). A file's flavour comes from a first-line
`-- dialect: X` comment, else from its folder's name when that is a flavour, else ksqlDB. Header
comments `-- mode:` and `-- schedule:` set the run mode and a repartition job's cron.

A `Query` is compiled once, when it is loaded, and keeps its compiled sub-topologies: a run, a
backfill, a check or a sensor tick all use that compilation, so what runs is what EXPLAIN shows.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from streamjoin.app.compiling import compile_program
from streamjoin.dialect import FLAVOURS, StreamJoinError, declared_flavour, span
from streamjoin.plan import Program, explain, plan_program
from streamjoin.plan import nodes as P
from streamjoin.plan.catalog import Catalog
from streamjoin.plan.rewrites import walk
from streamjoin.runtime.compiled import CompiledQuery
from streamjoin.runtime.contract import STATE_FORMAT

SOURCES_FILE = "sources.sql"
_HEADER = re.compile(r"^--\s*(mode|schedule)\s*:\s*(.+?)\s*$", re.I | re.M)
# what Dagster accepts as an asset or op name, which the file name becomes
_NAME = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class SourceSpec:
    """A declared input relation (from sql/sources.sql) and the topic behind it."""

    name: str
    kind: str  # stream | table | versioned_table
    topic: str
    partitions: int


@dataclass(frozen=True)
class Query:
    """One query file of `sql/`: one asset.

    `name` is the file stem (the asset key), `group` the folder below sql/ ("default" at the top).
    `mode` is `available_now` (default) or `continuous`, from a `-- mode:` header comment;
    `schedule` is a cron string from a `-- schedule:` header comment (PARTITION BY jobs).
    `compiled` are its sub-topologies, upstream (repartition steps) first; every other field
    is derived from them when the file is loaded.
    """

    name: str
    group: str
    path: Path
    sql: str
    dialect: str
    explain: str
    source_names: tuple[str, ...]
    source_topics: tuple[str, ...]
    repartition_topics: tuple[str, ...]
    output_topic: str
    output_kind: str  # stream | table
    mode: str = "available_now"
    schedule: str | None = None
    is_repartition: bool = False  # a standalone PARTITION BY statement
    repartition_inputs: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (internal topic, topics it re-keys)
    compiled: tuple[CompiledQuery, ...] = field(default=(), compare=False, repr=False)
    output_at: tuple[int | None, int | None] = field(default=(None, None), compare=False, repr=False)  # in `sql`

    @property
    def code_version(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()[:16]

    @property
    def state_fingerprint(self) -> str:
        """Changes exactly when the compiled topology changes (operators, keys, windows, schema)
        or the engine's checkpoint layout does (`STATE_FORMAT`); comments or whitespace in the SQL
        leave it alone. A changed fingerprint means the checkpoint is incompatible: the query
        needs a reset + backfill, not a restart."""
        return hashlib.sha256(f"{self.explain}\nstate format {STATE_FORMAT}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class BrokenFile:
    """A query file that does not load (`load_project(..., on_error="collect")`): its name and
    group as a `Query` would have them, and the positioned error (a broken `sources.sql` breaks
    every query of its folder, each with that file's error)."""

    name: str
    group: str
    path: Path
    error: StreamJoinError


@dataclass(frozen=True)
class SqlProject:
    root: Path
    sources: tuple[SourceSpec, ...]
    queries: tuple[Query, ...]
    broken: tuple[BrokenFile, ...] = ()

    def query(self, name: str) -> Query:
        for q in self.queries:
            if q.name == name:
                return q
        raise KeyError(f"no query named {name!r} in {self.root}")


def folder_flavour(folder: Path, text: str) -> str:
    return declared_flavour(text, folder.name.lower() if folder.name.lower() in FLAVOURS else "ksqldb")


def read_sql(path: Path) -> str:
    """A .sql file's text: UTF-8, a leading byte-order mark dropped (editors write one). Bytes
    that are not UTF-8 are a positioned `encoding` error at the first of them."""
    data = Path(path).read_bytes()
    data = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        start = len(data[:error.start].decode("utf-8"))  # the bad byte is one U+FFFD in the snippet
        raise StreamJoinError(f"byte 0x{data[error.start]:02x} is not UTF-8 text: save the file as UTF-8 "
                              "(a .sql file holds SQL text, not binary data)", "encoding",
                              sql=data.decode("utf-8", errors="replace"), file=str(path), start=start) from None


def folder_catalog(folder: Path) -> Catalog:
    """The sources declared in `folder/sources.sql` (empty when there is none)."""
    path = folder / SOURCES_FILE
    if not path.exists():
        return Catalog()
    text = read_sql(path)
    return plan_program(text, Catalog(), folder_flavour(folder, text), file=str(path)).catalog


def plan_file(path: Path, flavour: str | None = None) -> Program:
    """A query file planned in `flavour` (default: the file's) over its folder's sources. Raises
    the positioned error of a broken file, or of one without a query."""
    text = read_sql(path)
    program = plan_program(text, folder_catalog(path.parent), flavour or folder_flavour(path.parent, text),
                           file=str(path))
    if not program.queries:
        raise StreamJoinError(f"the file holds no query: write a SELECT, CREATE STREAM|TABLE ... AS SELECT or "
                              f"INSERT INTO ... SELECT (inputs are declared in {SOURCES_FILE})", "no-query",
                              sql=text, file=str(path), start=0)
    return program


def compile_file(path: Path, flavour: str | None = None) -> list[CompiledQuery]:
    """The file's queries as compiled sub-topologies, upstream (repartitions) first."""
    return compile_program(plan_file(path, flavour))


ON_ERROR = ("raise", "collect")


def load_project(sql_dir: Path, on_error: str = "raise") -> SqlProject:
    """Parse, plan and compile every file below `sql_dir`. A broken file raises the planner's
    error (file, line, column, snippet) — or, with `on_error="collect"`, is listed in
    `SqlProject.broken` while every other file loads (an orchestrator keeps the good queries
    running and shows the broken one)."""
    if on_error not in ON_ERROR:
        raise ValueError(f"on_error must be one of {ON_ERROR}, got {on_error!r}")
    sql_dir = Path(sql_dir).resolve()
    sources: dict[str, SourceSpec] = {}
    queries, broken = [], []
    for path in sorted(sql_dir.rglob("*.sql")):
        try:
            if path.name == SOURCES_FILE:
                for s in folder_catalog(path.parent):
                    sources[s.topic] = SourceSpec(s.name, s.kind, s.topic, s.partitions or 1)
            else:
                queries.append(load_query(sql_dir, path))
        except StreamJoinError as error:
            if on_error == "raise":
                raise
            if path.name != SOURCES_FILE:  # a broken sources.sql shows in each of its queries
                broken.append(BrokenFile(_NAME_PART.sub("_", path.stem), _group(sql_dir, path), path, error))
    queries, clashes = _one_name_and_writer_each(queries)
    if clashes and on_error == "raise":
        raise clashes[0].error
    return SqlProject(sql_dir, tuple(sources.values()), tuple(queries), tuple(_unique_names(queries, broken + clashes)))


_NAME_PART = re.compile(r"[^A-Za-z0-9_]")


def _one_name_and_writer_each(queries: list[Query]) -> tuple[list[Query], list[BrokenFile]]:
    """Each query's name (its asset) and output topic belong to it alone: a later file (in path
    order) that takes either is broken, so two queries never mix their results in one topic and
    Dagster never sees one asset twice."""
    names: dict[str, Query] = {}
    topics: dict[str, Query] = {}
    kept, clashes = [], []
    for query in queries:
        first = names.setdefault(query.name, query)
        writer = topics.setdefault(query.output_topic, query) if first is query else query
        if first is query and writer is query:
            kept.append(query)
            continue
        if first is not query:
            rule, reason = "duplicate-name", (f"{first.path} has the same file name, which names the query and its "
                                              "asset: rename one of the files")
            start, end = 0, 0
        else:
            rule, reason = "duplicate-output", (f"topic {query.output_topic!r} is already the output of {writer.path}: "
                                                "two queries would mix their results in one topic; write this one's "
                                                "to another topic")
            start, end = query.output_at
        error = StreamJoinError(reason, rule, sql=query.sql, file=str(query.path), start=start or 0, end=end)
        clashes.append(BrokenFile(query.name, query.group, query.path, error))
    return kept, clashes


def _unique_names(queries: list[Query], broken: list[BrokenFile]) -> list[BrokenFile]:
    """Broken files named apart from the queries and each other (each one is an asset too)."""
    taken = {q.name for q in queries}
    unique = []
    for file in broken:
        name = next(n for n in (file.name, *(f"{file.name}_{i}" for i in range(2, len(broken) + 2))) if n not in taken)
        taken.add(name)
        unique.append(replace(file, name=name) if name != file.name else file)
    return unique


def _group(sql_dir: Path, path: Path) -> str:
    return path.parent.relative_to(sql_dir).as_posix().replace("/", "_") if path.parent != sql_dir else "default"


def load_query(sql_dir: Path, path: Path) -> Query:
    text = read_sql(path)
    if not _NAME.fullmatch(path.stem):
        raise StreamJoinError(f"the file name {path.stem!r} names the query and its asset, and a name holds only "
                              "ASCII letters, digits and _: rename the file (e.g. "
                              f"{_NAME_PART.sub('_', path.stem)}.sql)", "query-name", sql=text, file=str(path), start=0)
    program = plan_file(path)
    compiled = compile_program(program)
    main = compiled[-1]
    headers = {k.lower(): v for k, v in _HEADER.findall(text)}
    inputs = [n.source for q in compiled for n in walk(q.sink) if isinstance(n, P.Source)]
    internal = {q.sink.topic for q in compiled[:-1]}
    group = _group(sql_dir, path)
    is_repartition = any(isinstance(n, P.Repartition) and n.reason == "PARTITION BY" for n in walk(main.sink))
    return Query(
        name=path.stem, group=group, path=path, sql=text, dialect=main.dialect,
        explain="\n\n".join(explain(q.sink) for q in compiled),
        source_names=tuple(dict.fromkeys(s.name for s in inputs if s.topic not in internal)),
        source_topics=tuple(dict.fromkeys(s.topic for s in inputs if s.topic not in internal)),
        repartition_topics=tuple(sorted(internal)), output_topic=main.sink.topic, output_kind=main.sink.kind,
        mode=headers.get("mode", "available_now"), schedule=headers.get("schedule"),
        is_repartition=is_repartition and len(inputs) == 1,
        repartition_inputs=tuple((q.sink.topic, q.input_topics) for q in compiled[:-1]), compiled=tuple(compiled),
        output_at=span(program.queries[-1].statement))
