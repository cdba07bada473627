"""What a task runtime promises whoever drives it (the Spark adapter, the local runner): records
in as `InputRow`s; out, encoded `Emitted` records and a `Rejected` for every record or result
that cannot be decoded, evaluated or encoded (the driver sends it to the dead letters, counted,
and the task goes on); and counters. Pure Python: any driver can run a task."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from dataclasses import dataclass
from typing import Iterator, NamedTuple, Sequence

# The header every record the engine writes carries (see streamjoin.kafka.records): it names one
# write of one result, so it is never passed on to the results of a record that carries it.
REPLAY_HEADER = "streamjoin.id"

Headers = tuple[tuple[str, bytes | None], ...]

# The layout of what a task checkpoints: its runtime is pickled, so the classes it holds (stages,
# operators, bindings, rows in state) are part of the checkpoint. Bumped whenever one of them
# changes its fields or its module, or where a task keeps its state changes (3: the runtime
# beside the pages, in one state variable; 4: Entry and SinkBinding moved to runtime.bindings;
# 5: SerdeSpec.metadata_columns, the changelog formats' envelope columns; 6: SerdeSpec.wrap_single_key,
# Flink's row keys; 7: SerdeSpec's topic and schemas (registry formats), the lookup join's
# LookupJoinConfig and PostgresConnector; 8: the schema registry carried by RuntimeFactory to
# the tasks; 9: ExprOptions.sum_starts_at_zero; 10: each store's page tokens, for the workers' page
# caches; 11: a window store's expiring heap holds each key's earliest entry, not every entry); a
# checkpoint of another format is refused (reset the query and backfill), never
# half-read. `tests/pure/runtime/test_state_format.py` notices a change that was not bumped.
STATE_FORMAT = 11


class InputRow(NamedTuple):
    """One Kafka record as a task receives it (a tuple: a batch builds hundreds of thousands)."""

    topic: str
    partition: int
    offset: int
    ts: int
    key: bytes | None
    value: bytes | None
    headers: Headers = ()  # in record order; a key may repeat


def without_replay_header(headers: Headers) -> Headers:
    """`headers` but the engine's replay header: what a record's results carry (Kafka Streams
    forwards a record's headers; each write sets its own replay header anew)."""
    return tuple(h for h in headers if h[0] != REPLAY_HEADER) if headers else ()


class Emitted(NamedTuple):
    """An encoded output record bound for one sink topic (a tuple: one per result, built with
    `_make` on the hot path)."""

    topic: str
    key: bytes | None
    value: bytes | None
    ts: int
    headers: Headers = ()  # those of the input record whose processing emitted it


@dataclass(frozen=True)
class Rejected:
    """A dead letter: the input record being processed (or, at the end of input, none) could not
    be decoded, evaluated or encoded, for `reason`."""

    reason: str


Output = Emitted | Rejected


class EmittedColumns:
    """The outputs of a run of records given column-wise: one Emitted to `topic` per entry of
    `indexes` (the run's record it is a result of, ascending; with that record's headers, less
    the replay header), no other output. Never held by a runtime (not part of the checkpoint)."""

    __slots__ = ("indexes", "topic", "keys", "values", "times")

    def __init__(self, indexes: list[int], topic: str, keys: list, values: list, times: list) -> None:
        self.indexes, self.topic, self.keys, self.values, self.times = indexes, topic, keys, values, times

    def per_row(self, rows: Sequence[InputRow]) -> list[list[Output]]:
        """The same outputs as a list per record of the run."""
        outputs: list[list[Output]] = [[] for _ in rows]
        self.append_to(rows, outputs)
        return outputs

    def append_to(self, rows: Sequence[InputRow], outputs: list[list[Output]]) -> None:
        """Each output appended to the list of its record in `outputs`."""
        for index, key, value, ts in zip(self.indexes, self.keys, self.values, self.times):
            outputs[index].append(Emitted(self.topic, key, value, ts, without_replay_header(rows[index].headers)))


# What a run of records gave: a list of outputs per record, or the same given column-wise.
RunOutputs = list[list[Output]] | EmittedColumns


class TaskRuntime(ABC):
    """The pure-Python side of one task. Picklable; everything it keeps is state."""

    input_topics: frozenset[str]

    def __init__(self) -> None:
        self.metrics: Counter = Counter()
        self.seconds: Counter = Counter()  # time spent per stage (decode, operators, encode), for profiles
        self.stream_time: int | None = None  # the largest event time the task has seen
        self.ended_topics: set[str] = set()
        self.ended = False

    @abstractmethod
    def process(self, row: InputRow) -> list[Output]:
        """Decode and process one record; never raises for a bad record or result."""

    def process_all(self, rows: list[InputRow]) -> Iterator[tuple[InputRow, list[Output]]]:
        """Each of `rows` in order with what processing it gave (`process_runs`, per record)."""
        for run, outputs in self.process_runs(rows):
            yield from zip(run, outputs.per_row(run) if type(outputs) is EmittedColumns else outputs)

    def process_runs(self, rows: list[InputRow]) -> Iterator[tuple[Sequence[InputRow], RunOutputs]]:
        """`rows` in order, in runs, each with what processing it gave; a runtime may take runs of
        records at once, with the same outputs and effects as `process` one by one."""
        for row in rows:
            yield (row,), [self.process(row)]

    @abstractmethod
    def end_of_input(self) -> list[Output]:
        """All inputs are exhausted: advance time to the end and emit what that closes."""

    def counters(self) -> Counter:
        """Everything the task counted so far (its own counts and its operators')."""
        return Counter(self.metrics)
