"""Foreign-key table-table join (ksqlDB 1:N): any left column -> the right table's primary key.

Kafka Streams' design, in two stages: the left stage holds the left table, the right stage the
right table, and they exchange `Subscription`s (by right key) and `Response`s (by left key).
`ForeignKeyJoin` wires both stages in one task; across partitions every task reads the right
table whole (`CompiledQuery.broadcast_topics`), so each task is a complete join of its own left
partition.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Hashable

from streamjoin.operators.base import (
    Change,
    InMemoryStore,
    JoinProcessor,
    Record,
    Row,
    RowKind,
    Side,
)
from streamjoin.operators.changelog import ResultRow, keyed_result_changes, require_join_type
from streamjoin.operators.base import JoinType, Residual, accepts


@dataclass(frozen=True)
class ForeignKeyJoinConfig:
    # The right primary key a left row references (None: references nothing).
    foreign_key: Callable[[Row], Hashable | None]
    join_type: JoinType = JoinType.INNER
    residual: Residual | None = None
    emit_retractions: bool = False
    # Kafka Streams: a left row that is deleted, or updated to reference nothing, forwards a
    # tombstone even when it had no result row (a redundant delete); the ksqlDB docs show none.
    tombstone_without_result: bool = False

    def __post_init__(self) -> None:
        require_join_type("a foreign-key join", self.join_type, (JoinType.INNER, JoinType.LEFT))


@dataclass(frozen=True)
class Subscription:
    """Left stage -> right stage, partitioned by `right_key`: "send me `right_key`'s row for the
    left row `left_version` of `left_key`", or with `left_version` None "stop sending"."""

    right_key: Hashable
    left_key: Hashable
    left_version: int | None


@dataclass(frozen=True)
class Response:
    """Right stage -> left stage, partitioned by `left_key`: the right row (None: absent) the left
    row `left_version` references, with the right side's ts (None if it never existed)."""

    left_key: Hashable
    left_version: int
    right: Row | None
    right_ts: int | None


class ForeignKeyLeftStage:
    """Left-key side: the left table (pk -> (row, ts, version, replaced)) and the current result
    rows. A left change sends (un)subscriptions; a response for the current version of a left row
    becomes a result change. A response for an older version is dropped: the left row changed
    since and its own response is on the way (Kafka Streams' hash check). `replaced`: the
    version replaced an earlier row, so finding no right row deletes (see tombstone_without_result)."""

    def __init__(self, config: ForeignKeyJoinConfig) -> None:
        self.config = config
        self.left = InMemoryStore()
        self.results = InMemoryStore()  # left pk -> ResultRow
        self.versions = 0

    def on_left(self, record: Record) -> tuple[list[Change], list[Subscription]]:
        key = record.key
        old = self.left.get(key)
        old_fk = None if old is None else self.config.foreign_key(old[0])
        new_fk = None if record.value is None else self.config.foreign_key(record.value)
        subscriptions = []
        if old_fk is not None and old_fk != new_fk:
            subscriptions.append(Subscription(old_fk, key, None))
        if record.value is None:
            self.left.delete(key)
        else:
            self.versions += 1
            self.left.put(key, (record.value, record.ts, self.versions, old is not None))
        if new_fk is not None:  # the result waits for the right stage's response
            return [], subscriptions + [Subscription(new_fk, key, self.versions)]
        keeps_left = record.value is not None and self.config.join_type is JoinType.LEFT
        after = ResultRow(record.value, None) if keeps_left else None
        return self._emit(key, after, record.ts, deletes=old is not None), subscriptions

    def on_response(self, response: Response, own: bool = False) -> list[Change]:
        """`own`: the answer to the left row's own change (not a right row's fan-out)."""
        current = self.left.get(response.left_key)
        if current is None or current[2] != response.left_version:
            return []
        row, ts, _, replaced = current
        right = response.right
        if right is not None and not accepts(self.config.residual, row, right):
            right = None
        if right is None and self.config.join_type is JoinType.INNER:
            after = None
        else:
            after = ResultRow(row, right)
        if response.right_ts is not None:
            ts = max(ts, response.right_ts)
        return self._emit(response.left_key, after, ts, deletes=own and replaced)

    def _emit(self, key: Hashable, after: ResultRow | None, ts: int, deletes: bool = False) -> list[Change]:
        """The result change of `key`; `deletes`: a left change that leaves no result row is a
        tombstone even without a row to delete, where the config says so."""
        before = self.results.get(key)
        if after is None:
            self.results.delete(key)
        else:
            self.results.put(key, after)
        if before is None and after is None and deletes and self.config.tombstone_without_result:
            return [Change(RowKind.DELETE, key, None, None, ts)]
        return keyed_result_changes(key, before, after, ts, self.config.emit_retractions)


class ForeignKeyRightStage:
    """Right-key side: the right table (pk -> (row, ts)) and the subscription store
    right pk -> {left pk: left version}. A subscription is answered with the current right row;
    a right change is answered to every subscriber (the 1:N fan-out)."""

    def __init__(self) -> None:
        self.right = InMemoryStore()
        self.subscriptions = InMemoryStore()

    def on_subscription(self, subscription: Subscription) -> list[Response]:
        subscribers = dict(self.subscriptions.get(subscription.right_key, {}))
        if subscription.left_version is None:
            subscribers.pop(subscription.left_key, None)
        else:
            subscribers[subscription.left_key] = subscription.left_version
        if subscribers:
            self.subscriptions.put(subscription.right_key, subscribers)
        else:
            self.subscriptions.delete(subscription.right_key)
        if subscription.left_version is None:
            return []
        current = self.right.get(subscription.right_key)
        row, ts = current if current is not None else (None, None)
        return [Response(subscription.left_key, subscription.left_version, row, ts)]

    def on_right(self, record: Record) -> list[Response]:
        if record.value is None:
            self.right.delete(record.key)
        else:
            self.right.put(record.key, (record.value, record.ts))
        return [Response(left_key, version, record.value, record.ts)
                for left_key, version in self.subscriptions.get(record.key, {}).items()]


class ForeignKeyJoin(JoinProcessor):
    """Joins each left row to the right row whose primary key its foreign key names; the result
    is a table keyed by the left primary key (`Record.key` of left records; right records are
    keyed by the right primary key), INNER or LEFT.

    Both stages in one task: a left record goes to the left stage, its subscriptions to the
    right stage, the responses back to the left stage; a right record goes to the right stage
    and its responses to the left stage. Result changes follow `keyed_result_changes`
    (tombstones only for results that existed); output ts = the later of the left row's ts and
    the right side's current ts (a right tombstone's own ts).

    Worked timeline (ksqlDB's foreign-key semantic table; left rows [PK, fk, v]):

        t   left        right       subscriptions   INNER emits                  LEFT emits
        3   [A,a,1]                 a: A            -                            +I [A,a,1,-,-]
        4               [a,10]      a: A            +I [A,a,1,a,10]              +U (same row)
        5               [a,11]      a: A            +U [A,a,1,a,11]              +U
        6   [A,a,2]                 a: A            +U [A,a,2,a,11]              +U
        7   [B,a,3]                 a: A,B          +I [B,a,3,a,11]              +I
        8               [a,12]      a: A,B          +U A and +U B (fan-out)      +U, +U
        9               [c,13]      c: -            - (nobody subscribes to c)   -
        10  [C,c,4]                 c: C            +I [C,c,4,c,13]              +I
        11  [C] tomb.               c: -            -D [C]                       -D [C]
        13              [a] tomb.   a: A,B          -D [A], -D [B]               +U [A,a,2,-,-], B
        14  [B] tomb.               a: A            - (B has no result row)      -D [B]
    """

    def __init__(self, config: ForeignKeyJoinConfig) -> None:
        super().__init__()
        self.config = config
        self.left_stage = ForeignKeyLeftStage(config)
        self.right_stage = ForeignKeyRightStage()

    def process(self, record: Record) -> list[Change]:
        if record.key is None:
            self.metrics.count("null_key")
            return []
        if record.side is Side.RIGHT:
            return self._answer(self.right_stage.on_right(record))
        changes, subscriptions = self.left_stage.on_left(record)
        for subscription in subscriptions:
            changes += self._answer(self.right_stage.on_subscription(subscription), own=True)
        return changes

    def _answer(self, responses: list[Response], own: bool = False) -> list[Change]:
        return [change for response in responses
                for change in self.left_stage.on_response(response, own)]
