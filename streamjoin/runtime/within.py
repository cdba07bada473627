"""The fast path of windowed stream-stream joins (ksqlDB / Lenses `WITHIN`): both inputs' records
a run at a time."""

from __future__ import annotations

from itertools import groupby
from operator import itemgetter
from typing import Iterator, NamedTuple

from streamjoin.operators.base import Change, Record, RowKind, Side
from streamjoin.operators.stream_stream import StreamStreamJoin
from streamjoin.operators.stream_stream_runs import StreamStreamInnerRun, takes_runs
from streamjoin.runtime.bindings import Entry, Runtime
from streamjoin.runtime.contract import InputRow, Output, Rejected
from streamjoin.runtime.records import DATA_ERRORS, ColumnSource, column_source, describe, input_row, where
from streamjoin.runtime.run_sink import Columns, RunPath, RunSink, after_join, key_column
from streamjoin.runtime.stages import Event, JoinStage, ProjectStage
from streamjoin.serde.formats import DecodedRecord, SerdeSpec
from streamjoin.serde.values import hashable

_INSERT, _LEFT = RowKind.INSERT, Side.LEFT
_CONTAINERS = (list, dict)  # a key of these is made hashable, as JoinStage makes it


class _Input(NamedTuple):
    """One side of the join as its topic's records enter it."""

    serde: SerdeSpec
    alias: str
    port: Side
    key_column: str | None  # the join key when it is one column of the row, else None
    key_of: object  # the compiled join key of an env (JoinStage.left_key / right_key)


class StreamStreamWithin(RunPath):
    """Both sides of a stream-stream join within a window (`SELECT ... FROM orders o JOIN
    payments p WITHIN 1 HOURS ON o.id = p.id`) followed only by WHERE and the projection.

    The reference path (`PipelineRuntime.process_record`) turns each record into an event, a
    join record, changes, joined events and projected events, walking the pipeline between them,
    and encodes each result on its own. This path takes a run of records of the two topics, in
    the order the task processes them, into the same operator (`StreamStreamJoin.process`: the
    same store, timers and stream time), reading the join key of a one-column key without its
    compiled call (an INNER join on the engine's window stores takes the run in one loop of the
    operator's: `StreamStreamInnerRun`); then filters and projects the changes and encodes the
    run's results together.
    Where every output column is a plain column of either side and nothing filters (`plain`), the
    results are not built as rows: each output column is read for the whole run and written a
    column at a time. A record this path does not cover (one that does not decode, a null value,
    another task's partition) takes the reference path in its place in the run. The reference
    path stays the semantics: `tests/pure/runtime/test_within.py` runs both on randomized inputs
    (late, out-of-order, duplicate timestamps, null keys and values) and compares outputs,
    counters and state.

    Timeline (INNER JOIN WITHIN 10 MILLISECONDS GRACE PERIOD 0 MILLISECONDS, one key; O = orders,
    P = payments; one run, its results encoded together after its last record):

        O a@100                  stored
        P x@105  -> [a,x]@105    within 10 ms of a
        P y@130                  stored; stream time 130
        O b@90                   late: 90 + 10 + 0 < 130, dropped and counted (metrics["late"])
    """

    def __init__(self, runtime: Runtime, join: JoinStage, inputs: dict[str, _Input],
                 filters: tuple, project: ProjectStage) -> None:
        self.runtime = runtime
        self.join = join
        self.processor: StreamStreamJoin = join.processor
        self.inputs = inputs
        self.topics = tuple(inputs)
        self.filters = filters
        self.sink = RunSink(runtime, project)
        self.padding = (dict.fromkeys(join.left_aliases), dict.fromkeys(join.right_aliases))
        self.plain = self._plain_reads()
        self.kept = self._kept_columns()

    def _plain_reads(self) -> dict[str, tuple[bool, str, str]] | None:
        """Each output column as (from the left side, alias, column) where every one is a plain
        column of a side, nothing filters and the sink writes the results' columns; else None."""
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
        for topic, (serde, alias, _, key_column, _) in self.inputs.items():
            columns = [key_column, *(column for column in read.get(alias, ()) if column != key_column)]
            sources = [column_source(serde, column) for column in columns] if key_column is not None else [None]
            if None in sources:
                return None
            kept[topic] = tuple(zip(columns, sources))
        return kept

    @classmethod
    def of(cls, runtime: Runtime, topic: str) -> StreamStreamWithin | None:
        """The fast path of the join `topic` feeds, or None where it does not apply: two topics,
        one entry each, into the two sides of one `StreamStreamJoin` that only WHERE and the
        projection follow, with no watermarks."""
        entry = _single_entry(runtime, topic)
        if entry is None or runtime.uses_watermarks:
            return None
        join = entry.stage
        if not isinstance(join, JoinStage) or type(join.processor) is not StreamStreamJoin:
            return None
        feeding = {name: found for name in runtime.inputs if (found := _single_entry(runtime, name)) is not None
                   and found.stage is join}
        after = after_join(join)
        if len(feeding) != 2 or {found.port for found in feeding.values()} != set(Side) or after is None:
            return None
        inputs = {name: _side(runtime, name, found, join) for name, found in feeding.items()}
        return cls(runtime, join, inputs, *after)

    def _join_run(self, covered: Iterator[tuple[int, InputRow, DecodedRecord]], outputs: list[list[Output]]) -> list:
        """Each record of the run into the operator as JoinStage.on_event gives it, its changes
        filtered and projected (plain path: kept as (index, change)); a record whose evaluation
        fails is one dead letter in `outputs`. An INNER join on the engine's window stores takes
        the whole run in one loop (`StreamStreamInnerRun`)."""
        # Reading `covered` whole sends the records this path does not cover down the reference
        # path before the run's others reach the join: none of them changes what the join holds
        # (a null value is counted and numbered, an undecodable record is a dead letter; the
        # window join reads no sequence number), and what they change of the task (counts, its
        # latest time) does not depend on the order.
        keyed = self._keyed(covered, outputs)
        if takes_runs(self.processor):
            made = StreamStreamInnerRun(self.processor)(keyed)
            return made if self.plain is not None else self._results(made, keyed, outputs)
        process, plain, joined = self.processor.process, self.plain is not None, []
        for index, port, key, env, ts, (row, seq) in keyed:
            try:
                made = process(Record._make((port, key, env, ts, seq, _INSERT)))
                if plain:
                    joined.extend((index, change) for change in made)
                elif made:
                    joined.extend(self._resulted(index, made))
            except DATA_ERRORS as error:
                self._rejected(row, error, index, outputs)
        return joined

    def _keyed(self, covered: Iterator[tuple[int, InputRow, DecodedRecord]], outputs: list[list[Output]]) -> list:
        """(index, side, join key, env, ts, (row, the join's sequence number)) of each record
        whose join key evaluates (reading a one-column key without its compiled call), its row
        holding only the `kept` columns where the path keeps fewer; one whose key does not
        evaluate is a dead letter in `outputs`."""
        join, inputs, kept, keyed = self.join, self.inputs, self.kept, []
        for index, row, record in covered:
            serde, alias, port, key_column, key_of = inputs[row.topic]
            if kept is None:
                env = {alias: input_row(serde, record, row)}
            else:
                env = {alias: {column: source(record, row) for column, source in kept[row.topic]}}
            try:
                if key_column is None:
                    key = hashable(key_of(env))
                else:
                    value = env[alias].get(key_column)
                    key = None if value is None else hashable((value,)) if type(value) in _CONTAINERS else (value,)
            except DATA_ERRORS as error:
                self._rejected(row, error, index, outputs)
                continue
            join.seq += 1
            keyed.append((index, port, key, env, record.ts, (row, join.seq)))
        return keyed

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

    def _rejected(self, row: InputRow, error: Exception, index: int, outputs: list[list[Output]]) -> None:
        self.runtime.metrics["evaluation_errors"] += 1
        outputs[index] = [Rejected(f"{where(row)}: evaluation failed: {describe(error)}")]

    def _plain_columns(self, changes: list[tuple[int, Change]]) -> Columns:
        return ([index for index, _ in changes], [change.key for _, change in changes],
                [change.ts for _, change in changes],
                {name: _column(source, changes) for name, source in self.plain.items()})

    def _resulted(self, index: int, changes: list[Change]) -> list[tuple[int, Event]]:
        """A record's changes as JoinStage gives them (joined envs), filtered and projected."""
        filters, project, (left_padding, right_padding) = self.filters, self.sink.project, self.padding
        results = []
        for _, key, left, right, ts in changes:
            env = {**(left_padding if left is None else left), **(right_padding if right is None else right)}
            if filters and not all(predicate(env) is True for predicate in filters):
                continue
            results.append((index, project(key, env, ts)))
        return results


def _single_entry(runtime: Runtime, topic: str) -> Entry | None:
    """The one entry of `topic`, read by every task only for its own partitions; else None."""
    entries = runtime.inputs[topic][1]
    if len(entries) != 1 or entries[0].broadcast:
        return None
    return entries[0]


def _side(runtime: Runtime, topic: str, entry: Entry, join: JoinStage) -> _Input:
    key_of = join.left_key if entry.port is _LEFT else join.right_key
    return _Input(runtime.inputs[topic][0], entry.alias, entry.port, key_column(key_of, entry.alias), key_of)


def _column(source: tuple[bool, str, str], changes: list[tuple[int, Change]]) -> list:
    """One output column of the plain path's results: (from the left side, alias, column); None
    where that side is padded."""
    from_left, alias, column = source
    side = 2 if from_left else 3  # Change.left, Change.right
    return [None if (env := change[side]) is None or (row := env[alias]) is None else row.get(column)
            for _, change in changes]
