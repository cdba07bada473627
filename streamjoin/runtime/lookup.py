"""The fast path of the commonest join: stream records looking up a table (enrichment)."""

from __future__ import annotations

from itertools import repeat
from operator import itemgetter
from time import perf_counter
from typing import Iterator, NamedTuple, Sequence

from streamjoin.operators.base import JoinType, Side
from streamjoin.operators.stream_table import StreamTableJoin
from streamjoin.runtime.bindings import Entry, Runtime
from streamjoin.runtime.contract import InputRow, Output, Rejected, RunOutputs
from streamjoin.runtime.records import DATA_ERRORS, column_source, column_values, describe, input_row, where
from streamjoin.runtime.run_sink import Columns, RunPath, RunSink, after_join, key_column
from streamjoin.runtime.stages import JoinStage, ProjectStage
from streamjoin.serde.batches import decode_columns
from streamjoin.serde.formats import DecodedRecord, SerdeSpec

_LEFT, _INNER = Side.LEFT, JoinType.INNER


class _Match(NamedTuple):
    """A stream record of the plain path and the table's row it joined (`unmatched`: none)."""

    index: int  # of the record in its run
    key: tuple
    record: DecodedRecord
    row: InputRow
    table_env: dict


class StreamTableLookup(RunPath):
    """The stream side of a stream-table join whose results go through the query's projection
    straight to the sink (`SELECT ... FROM clicks c LEFT JOIN users u ON c.id = u.id`).

    The reference path (`PipelineRuntime.process_record`) turns each stream record into an
    event, a join record, a change, a joined event and a projected event, walking the pipeline
    between them, and encodes each result on its own. This path takes a run of stream records
    (decoded together by the runtime) through the same compiled pieces in one loop: the join key,
    the table's row for it, the residual, the WHERE predicates, the projection (a plain column
    read without its compiled call); then encodes the run's results together
    (`streamjoin.runtime.encoding`). `bench/runtime_alone.py`: ~2× the records per CPU second on
    the enrichment workload. Where every output column is a plain column of the stream row or
    the table's and nothing filters (`plain`), the run's results are not even built as rows: each
    output column is read for the whole run at once and the values written a column at a time.
    Table records, and records this path does not cover (one that does not decode, a null value,
    another task's partition), take the reference path, which also stays the semantics:
    `tests/pure/runtime/test_lookup.py` runs both on randomized changelogs (late and
    out-of-order records included) and compares outputs, counters and state.

    Timeline (LEFT JOIN, one key k; T = table topic, S = stream topic):

        T k=a@1      reference path: the table holds a
        S x@2        this path: [x, a]@2
        T k=null@3   reference path: the table is empty
        S y@4        this path: [y, null]@4

    It applies only where a stream record does nothing else: one entry reads the topic, no stage
    needs watermarks, unmatched rows are not kept for a late table row (Lenses' re-emission), and
    only WHERE filters and the projection follow the join.
    """

    def __init__(self, runtime: Runtime, topic: str, serde: SerdeSpec, entry: Entry,
                 filters: tuple, project: ProjectStage) -> None:
        self.runtime = runtime
        self.serde = serde
        self.alias = entry.alias
        self.topics = (topic,)  # the one topic whose records it takes
        self.join: JoinStage = entry.stage
        self.processor: StreamTableJoin = self.join.processor
        self.stream_on_left = entry.port is _LEFT
        self.key = self.join.left_key if self.stream_on_left else self.join.right_key
        # A key that is one column of the stream row is read here, without the compiled calls.
        self.key_column = key_column(self.key, self.alias)
        self.filters = filters
        self.sink = RunSink(runtime, project)
        self.plain = self._plain_reads(serde)
        # (alias, column) of each output column read from the table row, in output order
        self.table_reads = [source for source in self.plain[1].values() if type(source) is tuple] if self.plain else []

    def _plain_reads(self, serde: SerdeSpec) -> tuple | None:
        """(the join key's source, every projected column's source, the sink's value columns):
        where each is read straight from the stream record or the table row. None unless the join
        key and every projected column are plain columns, nothing else filters, the sink writes
        the projection as it is, keyed by the join key, and its value format writes columns."""
        values = self.sink.column_values()
        if self.key_column is None or self.filters or self.processor.config.residual is not None or values is None:
            return None
        key = column_source(serde, self.key_column)
        self.stream_columns = {}  # output name -> the stream column it is (for `process_columns`)
        table_aliases = set(self.join.right_aliases if self.stream_on_left else self.join.left_aliases)
        sources = {}
        for name, _, read in self.sink.columns:
            if read is None:
                return None
            alias, column = read
            if alias == self.alias:
                sources[name] = column_source(serde, column)
                self.stream_columns[name] = column
                if sources[name] is None:
                    return None
            elif alias in table_aliases:
                sources[name] = (alias, column)
            else:
                return None
        if key is None or not set(values) <= set(sources):
            return None
        return key, sources, values

    @classmethod
    def of(cls, runtime: Runtime, topic: str) -> StreamTableLookup | None:
        """The fast path for `topic`'s records, or None where it does not apply."""
        serde, entries = runtime.inputs[topic]
        if len(entries) != 1 or runtime.uses_watermarks:
            return None
        entry = entries[0]
        join = entry.stage
        if entry.broadcast or not isinstance(join, JoinStage) or type(join.processor) is not StreamTableJoin:
            return None
        config = join.processor.config
        after = after_join(join)
        if entry.port is not config.stream_side or config.reemit_on_late_table_row or after is None:
            return None
        return cls(runtime, topic, serde, entry, *after)

    def _join_run(self, covered: Iterator[tuple[int, InputRow, DecodedRecord]], outputs: list[list[Output]]) -> list:
        """Each stream record of the run looked up in the table as the join stage and operator do
        on the reference path (StreamTableJoin._lookup), then filtered and projected (or, on the
        plain path, kept as a `_Match`); one whose evaluation fails is a dead letter in `outputs`.
        Within a run only stream records arrive, whose effects on the task (counts, the stream
        time, the join's sequence number) do not depend on their order: a record the reference
        path takes in the middle of the run changes nothing for the others."""
        runtime, serde, alias = self.runtime, self.serde, self.alias
        join, processor, plain = self.join, self.processor, self.plain
        table_get, residual = processor.table.get, processor.config.residual
        inner, on_left = processor.config.join_type is _INNER, self.stream_on_left
        unmatched = dict.fromkeys(join.right_aliases if on_left else join.left_aliases)
        key_of, key_column, filters, project = self.key, self.key_column, self.filters, self.sink.project
        read_key = plain[0] if plain else None
        joined: list = []  # (index of the row, its projected result), or the plain path's `_Match`es
        for index, row, record in covered:
            if plain:
                value = read_key(record, row)
            else:
                stream_row = input_row(serde, record, row)
                env = {alias: stream_row}
                value = None if key_column is None else stream_row.get(key_column)
            try:
                key = key_of(env) if key_column is None else None if value is None else (value,)
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
                if plain:
                    joined.append(_Match(index, key, record, row, table_env))
                    continue
                env = {**env, **table_env} if on_left else {**table_env, **env}
                if filters and not all(predicate(env) is True for predicate in filters):
                    continue
                joined.append((index, project(key, env, record.ts)))
            except DATA_ERRORS as error:
                runtime.metrics["evaluation_errors"] += 1
                outputs[index] = [Rejected(f"{where(row)}: evaluation failed: {describe(error)}")]
        return joined

    def process_columns(self, rows: Sequence[InputRow], segment: dict) -> RunOutputs | None:
        """The run's outputs, a column at a time from decoding to the sink (`plain` only): the
        join key's column, the table's output values of each distinct key (`_look_up`), the
        output columns picked from the stream's columns and those values. None where the run
        takes `process_run`: a record that does not decode cleanly or has no value, another
        task's partition (the record path says what happens to those)."""
        runtime = self.runtime
        if not self.plain or set(map(itemgetter(1), rows)) != {runtime.task}:  # (1: the partition)
            return None
        started = perf_counter()
        keys, values = list(map(itemgetter(4), rows)), list(map(itemgetter(5), rows))  # (4, 5: key, value)
        decoded = decode_columns(self.serde, keys, values)
        decoded_at = perf_counter()
        runtime.seconds["decode"] += decoded_at - started
        if decoded is None:
            return None
        key_values = column_values(self.serde, self.key_column, rows, decoded)
        runtime.metrics["input_records"] += len(rows)
        times = list(map(itemgetter(3), rows))  # (3: the record time, as `decode` gives it here)
        if runtime.stream_time is None or max(times) > runtime.stream_time:
            runtime.stream_time = max(times)
        kept, picked = self._look_up(key_values, segment)
        everything = len(kept) == len(rows)
        table_columns = iter(zip(*picked)) if picked else repeat(())
        columns = {}
        for name, source in self.plain[1].items():
            if type(source) is tuple:  # (alias, column) of the table row
                columns[name] = list(next(table_columns))
            else:
                values = column_values(self.serde, self.stream_columns[name], rows, decoded)
                columns[name] = values if everything else [values[index] for index in kept]
        kept_keys = key_values if everything else [key_values[index] for index in kept]
        joined_at = perf_counter()
        runtime.seconds["operators"] += joined_at - decoded_at
        outputs = self.sink.emitted_columns(rows, kept, [(value,) for value in kept_keys],
                                            times if everything else [times[index] for index in kept], columns)
        runtime.seconds["encode"] += perf_counter() - joined_at
        return outputs

    def _look_up(self, key_values: list, segment: dict) -> tuple[list[int], list[tuple]]:
        """(the indexes of the records with a result, for each the table row's values of the
        output's table columns, None where it has none), counted as the reference path counts.
        `segment` keeps those values (None: no row) per key value for the runs of this path that
        follow each other with no other record between them: the table cannot change there, so
        a key is looked up once in all of them."""
        join, processor = self.join, self.processor
        join.seq += len(key_values)
        nulls = key_values.count(None)
        if nulls:
            processor.metrics.count("null_key", nulls)
        if nulls < len(key_values):
            processor.stream_started = True
        table_get, reads = processor.table.get, self.table_reads
        for value in [value for value in dict.fromkeys(key_values) if value not in segment]:
            if value is not None:
                current = table_get((value,))
                segment[value] = None if current is None else \
                    tuple(None if (row := current[0][alias]) is None else row.get(column) for alias, column in reads)
        if processor.config.join_type is _INNER:
            kept = [index for index, value in enumerate(key_values) if segment.get(value) is not None]
            return kept, [segment[key_values[index]] for index in kept]
        kept = [index for index, value in enumerate(key_values) if value is not None] if nulls else \
            list(range(len(key_values)))
        picked = list(map(segment.__getitem__, key_values if not nulls else [key_values[index] for index in kept]))
        if None in picked:  # a key the table has no row for: its columns are NULL
            unmatched = (None,) * len(reads)
            picked = [values or unmatched for values in picked]
        return kept, picked

    def _plain_columns(self, matches: list[_Match]) -> Columns:
        return Columns([match.index for match in matches], [match.key for match in matches],
                       [match.record.ts for match in matches],
                       {name: _column(source, matches) for name, source in self.plain[1].items()})


def _column(source, matches: list[_Match]) -> list:
    """One column of the plain path's results: a column of the stream record (a `column_source`)
    or (alias, column) of the table's row, None where the table had none."""
    if type(source) is tuple:
        alias, column = source
        return [None if (row := match.table_env[alias]) is None else row.get(column) for match in matches]
    return [source(match.record, match.row) for match in matches]
