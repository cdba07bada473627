"""What the fast paths (runtime.lookup, runtime.within) share around their join step: which of a
run's records they take (`RunPath`), the WHERE predicates and the projection that follow the
join, and the run's results written as the sink's records at once, a column at a time where
every result column is a plain column (`RunSink`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from time import perf_counter
from typing import Iterator, NamedTuple, Sequence

from streamjoin.expr.core import column_read
from streamjoin.operators.base import RowKind
from streamjoin.runtime.bindings import Runtime
from streamjoin.runtime.contract import Emitted, EmittedColumns, InputRow, Output, RunOutputs, without_replay_header
from streamjoin.runtime.encoding import encode_events
from streamjoin.runtime.records import DATA_ERRORS
from streamjoin.runtime.stages import Event, FilterStage, JoinStage, ProjectStage
from streamjoin.serde.batches import encode_keys, encode_value_columns, encodes_value_columns
from streamjoin.serde.formats import DecodedRecord

_INSERT, _DELETE = RowKind.INSERT, RowKind.DELETE


def after_join(join: JoinStage) -> tuple[tuple, ProjectStage] | None:
    """(the WHERE predicates, the projection) when they are all that follows the join."""
    filters, stage = [], join.downstream
    while type(stage) is FilterStage:
        filters.append(stage.predicate)
        stage = stage.downstream
    if type(stage) is not ProjectStage or stage.downstream is not None:
        return None
    return tuple(filters), stage


def key_column(key_of, alias: str) -> str | None:
    """The column of `alias` that the compiled join key `key_of` is, where the key is that one
    plain column (`compiler.key_function` keeps its one part), so a path can read it itself."""
    part = getattr(key_of, "part", None)
    read = part and column_read(part)
    return read[1] if read and read[0] == alias else None


class Columns(NamedTuple):
    """A run's results for the sink, from their columns: each result's row index, key, time;
    the output columns (name -> values); the positions of the results that are tombstones of
    their key (their columns are not written)."""

    indexes: list[int]
    keys: list
    times: list[int]
    values: dict[str, list]
    tombstones: frozenset[int] = frozenset()


class RunSink:
    """The projection of a fast path's results and their sink records, a run at a time. A run's
    results are encoded together; where any one cannot be, they go one by one as the reference
    path sends them (`runtime.emit`: that one becomes a dead letter, the others still go out)."""

    def __init__(self, runtime: Runtime, project: ProjectStage) -> None:
        self.runtime = runtime
        self.output_alias = project.alias
        # (output name, compiled expression, (alias, column) where it is a plain column or None)
        self.columns = tuple((name, column, column_read(column)) for name, column in project.columns)
        # The sink's value columns picked from the projection's row: that row is written as it is.
        sink = runtime.sink
        picks = getattr(sink.value, "picks", None)
        self.writes_projection = (sink.timestamp_column is None and picks is not None and picks[0] == project.alias
                                  and set(picks[1]) <= {name for name, _ in project.columns})

    def column_values(self) -> tuple[str, ...] | None:
        """The sink's value columns, when results can be written from their columns: the sink
        writes the projection as it is, keyed by the join key, in a format that writes columns."""
        sink = self.runtime.sink
        if not self.writes_projection or sink.key is not None or not encodes_value_columns(sink.serde):
            return None
        return tuple(name for name, _ in sink.serde.payload_columns)

    def project(self, key, env: dict, ts: int) -> Event:
        """The projection's result of `env`: a plain column is read here, any other expression is
        evaluated; a relation the env lacks, the compiled expressions say so (an ExpressionError)."""
        try:
            row = {name: column(env) if read is None else (None if (part := env[read[0]]) is None else part.get(read[1]))
                   for name, column, read in self.columns}
        except KeyError:
            row = {name: column(env) for name, column, _ in self.columns}
        return Event._make((_INSERT, key, {self.output_alias: row}, ts))

    def write(self, rows: Sequence[InputRow], results: list[tuple[int, Event]], outputs: list[list[Output]]) -> None:
        """Each result (index of its row, projected event) as the sink's record, into `outputs`."""
        runtime = self.runtime
        events = [event for _, event in results]
        alias = self.output_alias
        projected = [None if event.env is None else event.env[alias] for event in events] \
            if self.writes_projection else None
        emitted = encode_events(runtime.sink, events, projected)
        if emitted is not None:
            self._deliver(rows, [index for index, _ in results], emitted, outputs)
            return
        for index, event in results:
            headers = rows[index].headers
            runtime.emit([event], without_replay_header(headers) if headers else (), outputs[index])

    def write_columns(self, rows: Sequence[InputRow], results: Columns, outputs: list[list[Output]]) -> None:
        """Results given as their columns (`column_values` names the sink's columns), written a
        column at a time into `outputs`."""
        written = self.emitted_columns(rows, *results, outputs)
        if type(written) is EmittedColumns:
            written.append_to(rows, outputs)

    def emitted_columns(self, rows: Sequence[InputRow], indexes: list[int], keys: list, times: list[int],
                        columns: dict[str, list], tombstones: frozenset[int] = frozenset(),
                        outputs: list[list[Output]] | None = None) -> RunOutputs:
        """The results (as `Columns` gives them) encoded a column at a time, as the run's outputs
        (`EmittedColumns`, a tombstone's value None); where one cannot be encoded, all of them one
        by one as the reference path writes them (that one a dead letter) into `outputs` (new
        lists when None), which are returned."""
        sink = self.runtime.sink
        value_columns = [columns[name] for name in self.column_values()]
        try:
            if tombstones:  # only the other results' columns are written
                live = [at for at in range(len(indexes)) if at not in tombstones]
                written = iter(encode_value_columns(sink.serde, [[column[at] for at in live]
                                                                 for column in value_columns]))
                values = [None if at in tombstones else next(written) for at in range(len(indexes))]
            else:
                values = encode_value_columns(sink.serde, value_columns)
            key_bytes = encode_keys(sink.serde, keys)
            if tombstones and any(key_bytes[at] is None for at in tombstones):
                raise ValueError("a tombstone without a key")  # the reference path says why, per result
        except DATA_ERRORS:
            outputs = [[] for _ in rows] if outputs is None else outputs
            projected = [dict(zip(columns, values)) for values in zip(*columns.values())]
            self.write(rows, [(index, Event._make((_DELETE, key, None, ts)) if at in tombstones else
                               Event._make((_INSERT, key, {self.output_alias: row}, ts)))
                              for at, (index, key, ts, row) in enumerate(zip(indexes, keys, times, projected))],
                       outputs)
            return outputs
        self.runtime.metrics["output_records"] += len(indexes)
        return EmittedColumns(indexes, sink.topic, key_bytes, values, times)

    def _deliver(self, rows: Sequence[InputRow], indexes: list[int], emitted: list[Emitted],
                 outputs: list[list[Output]]) -> None:
        """Each encoded result appended to the outputs of its row, with that row's headers."""
        for index, record in zip(indexes, emitted):
            headers = rows[index].headers
            outputs[index].append(record._replace(headers=without_replay_header(headers)) if headers else record)
        self.runtime.metrics["output_records"] += len(emitted)


class _Tally:
    """The records of a run a fast path took: how many, their latest time; and the seconds the
    others spent on the reference path."""

    __slots__ = ("counted", "latest", "aside")

    def __init__(self) -> None:
        self.counted, self.latest, self.aside = 0, None, 0.0


class RunPath(ABC):
    """A fast path: a run of records (in the task's order, with their `decode_all` records) through
    its join step (`_join_run`), then written by its `RunSink`, from the results' columns where
    `plain` (`_plain_columns`). The outputs per record are what the reference path gives."""

    runtime: Runtime
    sink: RunSink
    plain: object | None  # set where results are written from their columns
    topics: tuple[str, ...]  # the topics whose records it takes
    takes_tombstones = False  # whether it takes records with no value (else the reference path does)

    def process_columns(self, rows: Sequence[InputRow], segment: dict) -> RunOutputs | None:
        """The run's outputs computed a column at a time, where the path can (else None: the run
        takes `process_run`). `segment`: a dict the path may keep things in for the runs that
        follow this one with no record of another path or topic between them."""
        return None

    def process_run(self, rows: Sequence[InputRow], records: Sequence[DecodedRecord | None]) -> list[list[Output]]:
        runtime = self.runtime
        clock = perf_counter()
        outputs: list[list[Output]] = [[] for _ in rows]
        tally = _Tally()
        joined = self._join_run(self._covered(rows, records, outputs, tally), outputs)
        runtime.metrics["input_records"] += tally.counted
        if tally.latest is not None and (runtime.stream_time is None or tally.latest > runtime.stream_time):
            runtime.stream_time = tally.latest
        columns = self._plain_columns(joined) if self.plain else None
        pushed = perf_counter()
        runtime.seconds["operators"] += pushed - clock - tally.aside  # the reference path's is in its own steps
        if columns is None:
            self.sink.write(rows, joined, outputs)
        else:
            self.sink.write_columns(rows, columns, outputs)
        runtime.seconds["encode"] += perf_counter() - pushed
        return outputs

    def _covered(self, rows: Sequence[InputRow], records: Sequence[DecodedRecord | None], outputs: list[list[Output]],
                 tally: _Tally) -> Iterator[tuple[int, InputRow, DecodedRecord]]:
        """The records this path takes, with their indexes; one it does not (it does not decode,
        a null value unless `takes_tombstones`, another task's partition) takes the reference
        path, into `outputs` (a dead letter, or counted as ignored)."""
        runtime, task, tombstones = self.runtime, self.runtime.task, self.takes_tombstones
        for index, (row, record) in enumerate(zip(rows, records)):
            if record is None or (record.value is None and not tombstones) or row.partition != task:
                before = perf_counter()
                outputs[index] = runtime.process_record(row)
                tally.aside += perf_counter() - before
                continue
            tally.counted += 1
            if tally.latest is None or record.ts > tally.latest:
                tally.latest = record.ts
            yield index, row, record

    @abstractmethod
    def _join_run(self, covered: Iterator[tuple[int, InputRow, DecodedRecord]], outputs: list[list[Output]]) -> list:
        """The results of the covered records: (index of the row, projected event); on the plain
        path what `_plain_columns` reads. A record whose evaluation fails is a dead letter in `outputs`."""

    @abstractmethod
    def _plain_columns(self, joined: list) -> Columns:
        """The plain path's results as the sink's columns."""
