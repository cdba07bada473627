"""What the fast paths over both inputs of a join (runtime.within, runtime.upserts) share: the two
topics that feed one join, how each side's records enter it, and the results' columns."""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter
from typing import Iterator, NamedTuple

from streamjoin.operators.base import Change, Record, RowKind, Side
from streamjoin.runtime.bindings import Entry, Runtime
from streamjoin.runtime.contract import InputRow, Output, Rejected
from streamjoin.runtime.records import DATA_ERRORS, ColumnSource, column_source, describe, input_row, where
from streamjoin.runtime.run_sink import Columns, RunPath, RunSink, after_join, key_column
from streamjoin.runtime.stages import Event, JoinStage, ProjectStage
from streamjoin.serde.formats import DecodedRecord, SerdeSpec
from streamjoin.serde.values import hashable

_LEFT, _INSERT, _DELETE = Side.LEFT, RowKind.INSERT, RowKind.DELETE
_CONTAINERS = (list, dict)  # a key of these is made hashable, as JoinStage makes it


class SideInput(NamedTuple):
    """One side of the join as its topic's records enter it."""

    serde: SerdeSpec
    alias: str
    port: Side
    key_column: str | None  # the join key when it is one column of the row, else None
    key_of: object  # the compiled join key of an env (JoinStage.left_key / right_key)


class TwoSidedPath(RunPath):
    """A fast path taking the records of both topics of one join, in the task's order, followed
    only by WHERE and the projection. `plain`: each output column as (from the left side, alias,
    column) where every one is a plain column of a side, nothing filters and the sink writes the
    results' columns; else None. `kept`: what a record's row keeps in the join's state, where
    that is fewer columns than the whole row. Each path names the join `operator` it feeds and,
    where that operator has a loop over whole runs, `loop`: (whether the running operator takes
    it, the loop's class), `(index, side, key, row, ts, anything)` records in, `(index, change)`
    out."""

    operator: type
    loop: tuple | None = None

    def __init__(self, runtime: Runtime, join: JoinStage, inputs: dict[str, SideInput],
                 filters: tuple, project: ProjectStage) -> None:
        self.runtime = runtime
        self.join = join
        self.processor = join.processor
        self.inputs = inputs
        self.topics = tuple(inputs)
        self.filters = filters
        self.sink = RunSink(runtime, project)
        self.padding = (dict.fromkeys(join.left_aliases), dict.fromkeys(join.right_aliases))
        self.plain = self._plain_reads()
        self.kept = self._kept_columns()

    @classmethod
    def of(cls, runtime: Runtime, topic: str) -> TwoSidedPath | None:
        """The path of the `operator` join that `topic` feeds (`feeding`), where it `takes` it; else None."""
        found = cls.feeding(runtime, topic)
        return None if found is None or not cls.takes(runtime, found[0]) else cls(runtime, *found)

    @classmethod
    def takes(cls, runtime: Runtime, join: JoinStage) -> bool:
        """Whether the path takes this join, beyond what `feeding` requires."""
        return True

    @classmethod
    def feeding(cls, runtime: Runtime, topic: str) -> tuple | None:
        """(join, inputs, filters, projection) of the `operator` join that `topic` feeds: two
        topics, one entry each, into its two sides, with only WHERE and the projection after it
        and no watermarks; else None."""
        entry = _single_entry(runtime, topic)
        if entry is None or runtime.uses_watermarks:
            return None
        join = entry.stage
        if not isinstance(join, JoinStage) or type(join.processor) is not cls.operator:
            return None
        feeding = {name: found for name in runtime.inputs if (found := _single_entry(runtime, name)) is not None
                   and found.stage is join}
        after = after_join(join)
        if len(feeding) != 2 or {found.port for found in feeding.values()} != set(Side) or after is None:
            return None
        return join, {name: _side(runtime, name, found, join) for name, found in feeding.items()}, *after

    def _plain_reads(self) -> dict[str, tuple[bool, str, str]] | None:
        values = self.sink.column_values()
        if self.filters or values is None:
            return None
        sides = {alias: True for alias in self.join.left_aliases} | {alias: False for alias in self.join.right_aliases}
        sources = {}
        for name, _, read in self.sink.columns:
            if read is None or read[0] not in sides:
                return None
            sources[name] = (sides[read[0]], *read)
        return sources if set(values) <= set(sources) else None

    def _kept_columns(self) -> dict[str, tuple[tuple[str, ColumnSource], ...]] | None:
        """Per topic, the columns its records keep in the join's state, each with where it is
        read from the record: on the plain path, with no residual condition and a one-column join
        key each side, the join key and the columns the results read (nothing else reads a
        stored row there); else None, whole rows (the pseudo-columns included)."""
        if self.plain is None or self.processor.config.residual is not None:
            return None
        read: dict[str, dict[str, None]] = {}
        for _, alias, column in self.plain.values():
            read.setdefault(alias, {})[column] = None  # an ordered set
        kept = {}
        for topic, (serde, alias, _, joined_on, _) in self.inputs.items():
            columns = [joined_on, *(column for column in read.get(alias, ()) if column != joined_on)]
            sources = [column_source(serde, column) for column in columns] if joined_on is not None else [None]
            if None in sources:
                return None
            kept[topic] = tuple(zip(columns, sources))
        return kept

    def _run_loop(self):
        """The operator's loop over a whole run of keyed records (`loop`), where it applies; else None."""
        if self.loop is None:
            return None
        takes, loop = self.loop
        return loop(self.processor) if takes(self.processor) else None

    def _join_run(self, covered: Iterator[tuple[int, InputRow, DecodedRecord]], outputs: list[list[Output]]) -> list:
        """Each record of the run into the operator as JoinStage.on_event gives it (a tombstone
        keyed by its record's key), its changes filtered and projected (plain path: kept as
        (index, change)); a record whose evaluation fails is one dead letter in `outputs`, after
        the operator took it where its key evaluated, as on the reference path. Where the
        operator has a loop over whole runs (`_run_loop`), it takes the run at once."""
        # Reading `covered` whole sends the records this path does not cover down the reference
        # path before the run's others reach the join. None of them changes what the join holds:
        # a record that does not decode is a dead letter, another task's partition moves only the
        # task's latest time, and a null value a path leaves to the reference path is counted and
        # numbered, a number the window join never reads. What they change of the task (counts,
        # its latest time) does not depend on the order.
        keyed, loop = self._keyed(covered, outputs), self._run_loop()
        if loop is not None:
            made = loop(keyed)
            return made if self.plain is not None else self._results(made, keyed, outputs)
        process, plain, joined = self.processor.process, self.plain is not None, []
        for index, port, key, env, ts, (row, seq) in keyed:
            try:
                made = process(Record._make((port, key, env, ts, seq, _DELETE if env is None else _INSERT)))
                if plain:
                    joined.extend((index, change) for change in made)
                elif made:
                    joined.extend(self._resulted(index, made))
            except DATA_ERRORS as error:
                self._rejected(row, error, index, outputs)
        return joined

    def _keyed(self, covered: Iterator[tuple[int, InputRow, DecodedRecord]], outputs: list[list[Output]]) -> list:
        """(index, side, join key, env, ts, (row, the join's sequence number)) of each record
        whose join key evaluates (a one-column key read without its compiled call; a tombstone:
        its record's key, env None), its row holding only the `kept` columns where the path keeps
        fewer; one whose key does not evaluate is a dead letter in `outputs`."""
        join, inputs, kept, keyed = self.join, self.inputs, self.kept, []
        for index, row, record in covered:
            serde, alias, port, key_column, key_of = inputs[row.topic]
            if record.value is None:
                env, key = None, record.key
            else:
                if kept is None:
                    env = {alias: input_row(serde, record, row)}
                else:
                    env = {alias: {column: source(record, row) for column, source in kept[row.topic]}}
                try:
                    key = join_key(env, alias, key_column, key_of)
                except DATA_ERRORS as error:
                    self._rejected(row, error, index, outputs)
                    continue
            join.seq += 1
            keyed.append((index, port, key, env, record.ts, (row, join.seq)))
        return keyed

    def _rejected(self, row: InputRow, error: Exception, index: int, outputs: list[list[Output]]) -> None:
        self.runtime.metrics["evaluation_errors"] += 1
        outputs[index] = [Rejected(f"{where(row)}: evaluation failed: {describe(error)}")]

    def _plain_columns(self, changes: list[tuple[int, Change]]) -> Columns:
        tombstones = frozenset(at for at, (_, change) in enumerate(changes)
                               if change.left is None and change.right is None and change.kind is _DELETE)
        return Columns([index for index, _ in changes], [change.key for _, change in changes],
                       [change.ts for _, change in changes],
                       {name: _column(source, changes) for name, source in self.plain.items()}, tombstones)

    def _results(self, made: list[tuple[int, Change]], keyed: list, outputs: list[list[Output]]) -> list:
        """Each record's changes filtered and projected; a record one of whose results fails to
        evaluate is one dead letter instead of all of them."""
        rows = {index: placed[0] for index, *_, placed in keyed}
        joined = []
        for index, changes in groupby(made, key=itemgetter(0)):
            try:
                joined.extend(self._resulted(index, [change for _, change in changes]))
            except DATA_ERRORS as error:
                self._rejected(rows[index], error, index, outputs)
        return joined

    def _resulted(self, index: int, changes: list[Change]) -> list[tuple[int, Event]]:
        """A record's changes as JoinStage gives them (joined envs, a tombstone without one),
        filtered and projected as the stages after the join take them (a tombstone passes)."""
        filters, project, (left_padding, right_padding) = self.filters, self.sink.project, self.padding
        results = []
        for kind, key, left, right, ts in changes:
            if left is None and right is None and kind is _DELETE:
                results.append((index, Event(kind, key, None, ts)))
                continue
            env = {**(left_padding if left is None else left), **(right_padding if right is None else right)}
            if filters and not all(predicate(env) is True for predicate in filters):
                continue
            results.append((index, project(key, env, ts)))
        return results


def join_key(env: dict, alias: str, key_column: str | None, key_of) -> tuple | None:
    """The join key of a record's env as JoinStage computes it, a one-column key read here."""
    if key_column is None:
        return hashable(key_of(env))
    value = env[alias].get(key_column)
    return None if value is None else hashable((value,)) if type(value) in _CONTAINERS else (value,)


def _single_entry(runtime: Runtime, topic: str) -> Entry | None:
    """The one entry of `topic`, read by every task only for its own partitions; else None."""
    entries = runtime.inputs[topic][1]
    if len(entries) != 1 or entries[0].broadcast:
        return None
    return entries[0]


def _side(runtime: Runtime, topic: str, entry: Entry, join: JoinStage) -> SideInput:
    key_of = join.left_key if entry.port is _LEFT else join.right_key
    return SideInput(runtime.inputs[topic][0], entry.alias, entry.port, key_column(key_of, entry.alias), key_of)


def _column(source: tuple[bool, str, str], changes: list[tuple[int, Change]]) -> list:
    """One output column of the plain path's results: (from the left side, alias, column); None
    where that side is padded (or the change is a tombstone)."""
    from_left, alias, column = source
    side = 2 if from_left else 3  # Change.left, Change.right
    return [None if (env := change[side]) is None or (row := env[alias]) is None else row.get(column)
            for _, change in changes]
