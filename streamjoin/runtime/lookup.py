"""The fast path of the commonest join: stream records looking up a table (enrichment)."""

from __future__ import annotations

from time import perf_counter
from typing import TYPE_CHECKING, Sequence

from streamjoin.expr.core import column_read
from streamjoin.operators.base import JoinType, RowKind, Side
from streamjoin.operators.stream_table import StreamTableJoin
from streamjoin.runtime.contract import InputRow, Output, Rejected, without_replay_header
from streamjoin.runtime.encoding import encode_events
from streamjoin.runtime.records import DATA_ERRORS, describe, input_row, where
from streamjoin.runtime.stages import Event, FilterStage, JoinStage, ProjectStage
from streamjoin.serde.formats import DecodedRecord, SerdeSpec

if TYPE_CHECKING:
    from streamjoin.runtime.task import Entry, PipelineRuntime

_INSERT, _LEFT, _INNER = RowKind.INSERT, Side.LEFT, JoinType.INNER


class StreamTableLookup:
    """The stream side of a stream-table join whose results go through the query's projection
    straight to the sink (`SELECT ... FROM clicks c LEFT JOIN users u ON c.id = u.id`).

    The reference path (`PipelineRuntime.process_record`) turns each stream record into an
    event, a join record, a change, a joined event and a projected event, walking the pipeline
    between them, and encodes each result on its own. This path takes a run of stream records
    (decoded together by the runtime) through the same compiled pieces in one loop: the join key,
    the table's row for it, the residual, the WHERE predicates, the projection (a plain column
    read without its compiled call); then encodes the run's results together
    (`streamjoin.runtime.encoding`). `bench/runtime_alone.py`: ~2× the records per CPU second on
    the enrichment workload. Table records, and records this path does not cover (one that does
    not decode, a null value, another task's partition), take the reference path, which also
    stays the semantics: `tests/pure/runtime/test_lookup.py` runs both on randomized changelogs
    (late and out-of-order records included) and compares outputs, counters and state.

    Timeline (LEFT JOIN, one key k; T = table topic, S = stream topic):

        T k=a@1      reference path: the table holds a
        S x@2        this path: [x, a]@2
        T k=null@3   reference path: the table is empty
        S y@4        this path: [y, null]@4

    It applies only where a stream record does nothing else: one entry reads the topic, no stage
    needs watermarks, unmatched rows are not kept for a late table row (Lenses' re-emission), and
    only WHERE filters and the projection follow the join.
    """

    def __init__(self, runtime: PipelineRuntime, serde: SerdeSpec, entry: Entry,
                 filters: tuple, project: ProjectStage) -> None:
        self.runtime = runtime
        self.serde = serde
        self.alias = entry.alias
        self.join: JoinStage = entry.stage
        self.processor: StreamTableJoin = self.join.processor
        self.stream_on_left = entry.port is _LEFT
        self.key = self.join.left_key if self.stream_on_left else self.join.right_key
        # A key that is one column of the stream row is read here, without the compiled calls.
        part = getattr(self.key, "part", None)
        read = part and column_read(part)
        self.key_column = read[1] if read and read[0] == self.alias else None
        self.filters = filters
        self.output_alias = project.alias
        self.columns = tuple((name, column, column_read(column)) for name, column in project.columns)
        # The sink's value columns picked from the projection's row: that row is written as it is.
        sink = runtime.sink
        picks = getattr(sink.value, "picks", None)
        self.writes_projection = (sink.timestamp_column is None and picks is not None and picks[0] == project.alias
                                  and set(picks[1]) <= {name for name, _ in project.columns})

    @classmethod
    def of(cls, runtime: PipelineRuntime, topic: str) -> StreamTableLookup | None:
        """The fast path for `topic`'s records, or None where it does not apply."""
        serde, entries = runtime.inputs[topic]
        if len(entries) != 1 or runtime.uses_watermarks:
            return None
        entry = entries[0]
        join = entry.stage
        if entry.broadcast or not isinstance(join, JoinStage) or type(join.processor) is not StreamTableJoin:
            return None
        config = join.processor.config
        after = _after_join(join)
        if entry.port is not config.stream_side or config.reemit_on_late_table_row or after is None:
            return None
        return cls(runtime, serde, entry, *after)

    def process_run(self, rows: Sequence[InputRow], records: Sequence[DecodedRecord | None]) -> list[list[Output]]:
        """The outputs of each of `rows` (records of this topic, in processing order, with their
        `decode_all` records), as the reference path gives them record by record; the results
        are encoded a run at a time.
        Within a run only stream records arrive, whose effects on the task (counts, the stream
        time, the join's sequence number) do not depend on their order: a record the reference
        path takes in the middle of the run changes nothing for the others."""
        runtime, serde, alias = self.runtime, self.serde, self.alias
        seconds, metrics = runtime.seconds, runtime.metrics
        clock = perf_counter()
        join, processor = self.join, self.processor
        table_get, config = processor.table.get, processor.config
        residual, inner, on_left = config.residual, config.join_type is _INNER, self.stream_on_left
        unmatched = dict.fromkeys(join.right_aliases if on_left else join.left_aliases)
        key_of, key_column, filters, columns = self.key, self.key_column, self.filters, self.columns
        output_alias, task = self.output_alias, runtime.task
        outputs: list[list[Output]] = [[] for _ in rows]
        results: list[tuple[int, Event]] = []  # (index of the row, its projected result)
        latest, counted = None, 0
        for index, (row, record) in enumerate(zip(rows, records)):
            if record is None or record.value is None or row.partition != task:
                before = perf_counter()
                outputs[index] = runtime.process_record(row)  # a dead letter, or counted as ignored
                clock -= perf_counter() - before  # what it took is in its own steps already
                continue
            counted += 1
            ts = record.ts
            if latest is None or ts > latest:
                latest = ts
            stream_row = input_row(serde, record, row)
            env = {alias: stream_row}
            try:  # the join stage and operator as on the reference path (StreamTableJoin._lookup)
                if key_column is None:
                    key = key_of(env)
                else:
                    value = stream_row.get(key_column)
                    key = None if value is None else (value,)
                join.seq += 1
                if key is None:
                    processor.metrics.count("null_key")
                    continue
                processor.stream_started = True
                current = table_get(key)
                table_env = None if current is None else current[0]
                if table_env is not None and residual is not None and \
                        residual(*((env, table_env) if on_left else (table_env, env))) is not True:
                    table_env = None
                if table_env is None:
                    if inner:
                        continue
                    table_env = unmatched
                if on_left:
                    env.update(table_env)
                else:
                    env = {**table_env, **env}
                if filters and not all(predicate(env) is True for predicate in filters):
                    continue
                results.append((index, Event._make((_INSERT, key, {output_alias: _projected(columns, env)}, ts))))
            except DATA_ERRORS as error:
                metrics["evaluation_errors"] += 1
                outputs[index] = [Rejected(f"{where(row)}: evaluation failed: {describe(error)}")]
        metrics["input_records"] += counted
        if latest is not None and (runtime.stream_time is None or latest > runtime.stream_time):
            runtime.stream_time = latest
        pushed = perf_counter()
        seconds["operators"] += pushed - clock
        self._encode(rows, results, outputs)
        seconds["encode"] += perf_counter() - pushed
        return outputs

    def _encode(self, rows: Sequence[InputRow], results: list[tuple[int, Event]], outputs: list[list[Output]]) -> None:
        """Each result as the sink's record, all at once; if any cannot be encoded, one by one as
        the reference path does (that one becomes a dead letter, the others still go out)."""
        runtime = self.runtime
        events = [event for _, event in results]
        projected = [event.env[self.output_alias] for event in events] if self.writes_projection else None
        emitted = encode_events(runtime.sink, events, projected)
        for position, (index, event) in enumerate(results):
            headers = rows[index].headers
            headers = without_replay_header(headers) if headers else ()
            if emitted is None:
                outputs[index] = runtime._emit([event], headers, [])
            else:
                outputs[index] = [emitted[position]._replace(headers=headers) if headers else emitted[position]]
        if emitted is not None:
            runtime.metrics["output_records"] += len(emitted)


def _after_join(join: JoinStage) -> tuple[tuple, ProjectStage] | None:
    """(the WHERE predicates, the projection) when they are all that follows the join."""
    filters, stage = [], join.downstream
    while type(stage) is FilterStage:
        filters.append(stage.predicate)
        stage = stage.downstream
    if type(stage) is not ProjectStage or stage.downstream is not None:
        return None
    return tuple(filters), stage


def _projected(columns: tuple, env: dict) -> dict:
    """The projection's row of `env`: a plain column is read here, any other expression is
    evaluated; a relation the env lacks, the compiled expressions say so (an ExpressionError)."""
    try:
        return {name: column(env) if read is None else (None if (row := env[read[0]]) is None else row.get(read[1]))
                for name, column, read in columns}
    except KeyError:
        return {name: column(env) for name, column, _ in columns}
