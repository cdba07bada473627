"""The stages a compiled query runs, per task, between decoded input records and encoded output.

Rows flow as `Event`s whose `env` maps each relation alias in scope to its current row (None for
the side an outer join padded with NULLs), so compiled expressions (`streamjoin.expr.compile`) evaluate
against any stage's output. A table deletion travels as an event with `env` None.

Watermarks flow the same way when a stage `needs_watermarks` (a window operator): each input's is
its source's largest event time minus the declared delay; a stage passes on its own (a join: the
lower of its two inputs'), after what closing windows emitted.

    decoded record ─▶ Entry (alias, port) ─▶ JoinStage ─▶ … ─▶ [Filter|Lateral|Aggregate|Rekey|Project]Stage
      ─▶ the task's SinkBinding (streamjoin.runtime.task)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, NamedTuple

from streamjoin.expr.core import Env
from streamjoin.operators.base import (
    BEGINNING_OF_TIME,
    END_OF_TIME,
    Change,
    InMemoryStore,
    JoinProcessor,
    Record,
    RowKind,
    Side,
)
from streamjoin.serde.values import hashable

# Enum members looked up once: a class attribute lookup on an enum costs several dict lookups.
_LEFT, _DELETE = Side.LEFT, RowKind.DELETE


class Event(NamedTuple):
    """A row on its way through the pipeline (a tuple: several are built per record; the hot
    paths use `_make`, about twice as fast as the constructor's argument handling)."""

    kind: RowKind
    key: Hashable | None
    env: Env | None  # None: a deletion of `key`
    ts: int


class Stage:
    """A node of the task's pipeline. `downstream` and `port` say where its events go."""

    downstream: "Stage | None" = None
    port: Side = Side.LEFT
    needs_watermarks = False
    watermark = BEGINNING_OF_TIME  # the watermark this stage passes on

    def on_event(self, event: Event, port: Side) -> list[Event]:
        raise NotImplementedError

    def on_watermark(self, watermark: int, port: Side) -> list[Event]:
        """Input `port`'s watermark moved to `watermark`: what that closes, and `self.watermark`
        moved on (a one-input stage passes it on as it is)."""
        self.watermark = max(self.watermark, watermark)
        return []

    def on_end(self) -> list[Event]:
        """End of input reached every upstream stage: emit what closing all windows emits."""
        return []


@dataclass
class JoinStage(Stage):
    """Feeds a `JoinProcessor`: computes each side's join key, turns changes into events."""

    processor: JoinProcessor
    left_key: Callable[[Env], Hashable | None]
    right_key: Callable[[Env], Hashable | None]
    left_aliases: tuple[str, ...]
    right_aliases: tuple[str, ...]
    seq: int = 0
    input_watermarks: list[int] = field(default_factory=lambda: [BEGINNING_OF_TIME, BEGINNING_OF_TIME])

    @property
    def needs_watermarks(self) -> bool:
        return self.processor.needs_watermarks

    def on_watermark(self, watermark: int, port: Side) -> list[Event]:
        self.input_watermarks[port] = max(self.input_watermarks[port], watermark)
        changes = self.processor.advance_watermark(port, watermark)
        self.watermark = max(self.watermark, min(self.input_watermarks) - self.processor.watermark_hold)
        return [self._event(c) for c in changes]

    def on_event(self, event: Event, port: Side) -> list[Event]:
        kind, key, env, ts = event
        if env is not None:  # an ARRAY, MAP or STRUCT join key is made hashable, as RekeyStage makes it
            key = hashable((self.left_key if port is _LEFT else self.right_key)(env))
        self.seq += 1
        changes = self.processor.process(Record._make((port, key, env, ts, self.seq, kind)))
        return [self._event(c) for c in changes]

    def on_end(self) -> list[Event]:
        return [self._event(c) for c in self.processor.advance_to(END_OF_TIME)]

    def _event(self, change: Change) -> Event:
        kind, key, left, right, ts = change
        if left is None and right is None and kind is _DELETE:  # a tombstone (Change.is_tombstone)
            return Event(kind, key, None, ts)
        env: Env = dict.fromkeys(self.left_aliases) if left is None else dict(left)
        env.update(right if right is not None else dict.fromkeys(self.right_aliases))
        return Event._make((kind, key, env, ts))


@dataclass
class FilterStage(Stage):
    """WHERE after a join; SQL semantics: NULL is not true. Deletions pass (they remove a key)."""

    predicate: Callable[[Env], Any]

    def on_event(self, event: Event, port: Side) -> list[Event]:
        if event.env is None or self.predicate(event.env) is True:
            return [event]
        return []


@dataclass
class LateralStage(Stage):
    """Lenses `LATERAL expr AS alias`: one event per element of the array `expr` evaluates to
    (none for NULL or empty)."""

    array: Callable[[Env], Any]
    alias: str
    column: str

    def on_event(self, event: Event, port: Side) -> list[Event]:
        if event.env is None:
            return [event]
        return [
            Event(event.kind, event.key, {**event.env, self.alias: {self.column: item}}, event.ts)
            for item in self.array(event.env) or ()
        ]


@dataclass
class Pipeline:
    """The stages of one task wired as a tree (each knows its downstream stage), upstream first."""

    stages: list[Stage] = field(default_factory=list)

    def push(self, stage: Stage, event: Event, port: Side) -> list[Event]:
        """Run `event` through `stage` and everything downstream; returns what reaches the end."""
        produced = stage.on_event(event, port)
        downstream = stage.downstream
        if downstream is None:
            return produced  # every stage returns a new list
        out: list[Event] = []
        for event in produced:
            out += self.push(downstream, event, stage.port)
        return out

    def _forward(self, stage: Stage, event: Event) -> list[Event]:
        if stage.downstream is None:
            return [event]
        return self.push(stage.downstream, event, stage.port)

    def end(self) -> list[Event]:
        out: list[Event] = []
        for stage in self.stages:
            for produced in stage.on_end():
                out.extend(self._forward(stage, produced))
        return out

    @property
    def uses_watermarks(self) -> bool:
        return any(stage.needs_watermarks for stage in self.stages)

    def advance(self, stage: Stage, watermark: int, port: Side) -> list[Event]:
        """Input `port` of `stage` reached `watermark`: what closing windows emit, downstream."""
        before = stage.watermark
        out: list[Event] = []
        for produced in stage.on_watermark(watermark, port):
            out.extend(self._forward(stage, produced))
        if stage.watermark > before and stage.downstream is not None:
            out.extend(self.advance(stage.downstream, stage.watermark, stage.port))
        return out


@dataclass
class AggregateStage(Stage):
    """GROUP BY over a changelog: each row is added to (retractions: removed from) its group and
    the group's new result row is emitted, keyed by the group key, with the input's ts, after a
    retraction (-U) of its previous row (which an upsert sink skips and a downstream join uses);
    a group that becomes empty is deleted (-D of its last row), and so is one whose row HAVING now
    rejects. Streams only add, so their result is an updating table."""

    plan: Any  # streamjoin.expr.aggregates.AggregatePlan
    alias: str  # the relation the result row travels under
    groups: InMemoryStore = field(default_factory=InMemoryStore)  # group key -> accumulators

    def on_event(self, event: Event, port: Side) -> list[Event]:
        if event.env is None:  # a keyed deletion carries no row to retract
            return []
        key = self.plan.group_key(event.env)
        state = self.groups.get(key) or self.plan.new_state()
        before = [Event(RowKind.UPDATE_BEFORE, key, {self.alias: self.plan.result(key, state)}, event.ts)] \
            if state.emitted else []  # the row it has out (none while HAVING rejects the group)
        if event.kind.is_retraction:
            self.plan.retract(state, event.env)
        else:
            self.plan.add(state, event.env)
        row = self.plan.result(key, state) if state.rows else None
        state.emitted = row is not None
        if state.rows == 0:
            self.groups.delete(key)
        else:
            self.groups.put(key, state)
        if row is None:  # an empty group, or one HAVING rejects: its row (if out) is deleted
            return [Event(RowKind.DELETE, key, before[0].env, event.ts)] if before else []
        return before + [Event(RowKind.UPDATE_AFTER, key, {self.alias: row}, event.ts)]


@dataclass
class ChangelogNormalizeStage(Stage):
    """An upsert input made a full changelog (Flink's ChangelogNormalize): the last row of each
    key is kept, so a key's new row is -U old, +U new and a tombstone is -D of the deleted row
    (with that row's time); a tombstone for an absent key emits nothing."""

    rows: InMemoryStore = field(default_factory=InMemoryStore)  # key -> (env, ts) of its last row

    def on_event(self, event: Event, port: Side) -> list[Event]:
        old = self.rows.get(event.key)
        if event.env is None:
            if old is None:
                return []
            self.rows.delete(event.key)
            return [Event(RowKind.DELETE, event.key, *old)]
        self.rows.put(event.key, (event.env, event.ts))
        if old is None:
            return [Event(RowKind.INSERT, event.key, event.env, event.ts)]
        return [Event(RowKind.UPDATE_BEFORE, event.key, *old), Event(RowKind.UPDATE_AFTER, event.key, event.env, event.ts)]


@dataclass
class DeduplicateStage(Stage):
    """Flink's ROW_NUMBER() = 1 deduplication: per key the first row (or the last, `keep_last`)
    by `time` (event time; None: arrival order). A row that takes a key's place retracts the
    row it replaces (-U old, +U new; the first of a key: +I); one that does not is dropped.
    Equal times: the first row stays first, the later row becomes last.

        keep last by t:   a@2 -> +I a@2 ; b@5 -> -U a, +U b ; c@4 -> nothing (older) ; d@5 -> -U b, +U d
        keep first by t:  a@2 -> +I a@2 ; b@5 -> nothing ; c@1 -> -U a, +U c (earlier)
    """

    keep_last: bool
    time: Callable[[Env], Any] | None
    rows: InMemoryStore = field(default_factory=InMemoryStore)  # key -> (time, env, ts) of its kept row

    def on_event(self, event: Event, port: Side) -> list[Event]:
        if event.env is None or event.kind.is_retraction:  # deduplication reads append-only input
            return []
        time = self.time(event.env) if self.time else 0
        kept = self.rows.get(event.key)
        if kept is not None and not (time >= kept[0] if self.keep_last else time < kept[0]):
            return []
        self.rows.put(event.key, (time, event.env, event.ts))
        if kept is None:
            return [Event(RowKind.INSERT, event.key, event.env, event.ts)]
        return [Event(RowKind.UPDATE_BEFORE, event.key, kept[1], kept[2]),
                Event(RowKind.UPDATE_AFTER, event.key, event.env, event.ts)]


@dataclass
class RekeyStage(Stage):
    """PARTITION BY / a repartition: the event's key becomes `key(env)` (deletions keep theirs)."""

    key: Callable[[Env], Hashable | None]

    def on_event(self, event: Event, port: Side) -> list[Event]:
        if event.env is None:
            return [event]
        return [Event(event.kind, hashable(self.key(event.env)), event.env, event.ts)]


@dataclass
class ProjectStage(Stage):
    """A view's projection read by a later query: its columns become relation `alias`."""

    alias: str
    columns: tuple[tuple[str, Callable[[Env], Any]], ...]

    def on_event(self, event: Event, port: Side) -> list[Event]:
        env = event.env
        if env is None:
            return [event]
        row = {name: column(env) for name, column in self.columns}
        return [Event._make((event.kind, event.key, {self.alias: row}, event.ts))]
