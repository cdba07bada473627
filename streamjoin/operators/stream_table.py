"""Stream-table joins: each stream record looks up the table's current row for its key."""

from __future__ import annotations

from dataclasses import dataclass

from streamjoin.operators.base import Change, InMemoryStore, JoinProcessor, JoinType, Record, Residual, RowKind, Side, accepts, oriented, padded

_INSERT, _INNER = RowKind.INSERT, JoinType.INNER  # looked up once: enum attributes are slow


@dataclass(frozen=True)
class StreamTableJoinConfig:
    """`join_type` is INNER or the outer join that keeps the stream side: LEFT for `stream LEFT
    JOIN table`, RIGHT for Lenses' `table RIGHT JOIN stream`. `stream_side` defaults to the
    side the join type keeps (LEFT for INNER).

    `reemit_on_late_table_row` (Lenses): an unmatched stream row of an outer join is emitted
    again, joined, when a table row for its key arrives later. `static_snapshot` (s-Server): the
    table is captured when the query starts; table records after the first stream record are
    ignored (and counted as `table_after_snapshot`)."""

    join_type: JoinType = JoinType.INNER
    stream_side: Side | None = None
    reemit_on_late_table_row: bool = False
    static_snapshot: bool = False
    residual: Residual | None = None

    def __post_init__(self) -> None:
        if self.stream_side is None:
            object.__setattr__(self, "stream_side", Side.RIGHT if self.join_type is JoinType.RIGHT else Side.LEFT)
        if self.join_type is not JoinType.INNER and self.join_type.value != self.stream_side.name:
            raise ValueError(f"a stream-table join keeps only the stream side: {self.join_type.value} JOIN "
                             f"with the stream on the {self.stream_side.name.lower()} is not supported")


class StreamTableJoin(JoinProcessor):
    """Stream-table join (ksqlDB, Lenses, s-Server static join): INNER or stream-side outer.

    The table side is a changelog kept in a KeyValueStore: a record with a value upserts its key,
    a null value (tombstone) deletes it. Table records only update the store (ksqlDB: "only
    events arriving on the stream side trigger ... output"). A stream record joins the current
    table row of its key, if any and if the residual accepts the pair; otherwise an outer join
    emits it null-padded. Output ts = the stream record's ts. Stream records with a null key or
    value are ignored and counted; so are table records with a null key.

    Timeline, LEFT JOIN (the ksqlDB doc's table, one key, s):

        S A@3    -> [A,null]@3      table empty
        T a@4                       table = a (no output)
        S B@5    -> [B,a]@5
        T null@8                    tombstone: table empty
        S C@9    -> [C,null]@9
        T d@14 ; S D@15 -> [D,d]@15

    With `reemit_on_late_table_row` a T c@10 would also emit [C,c] (ts = the later of the two);
    with `static_snapshot` the table stays what it was when S A@3 arrived.
    """

    def __init__(self, config: StreamTableJoinConfig) -> None:
        super().__init__()
        self.config = config
        self.table = InMemoryStore()  # key -> (row, ts)
        self.unmatched = InMemoryStore()  # key -> [(stream row, ts)] awaiting a late table row
        self.stream_started = False

    def process(self, record: Record) -> list[Change]:
        if record.key is None:
            self.metrics.count("null_key")
            return []
        if record.side is self.config.stream_side:
            return self._lookup(record)
        return self._update_table(record)

    def _lookup(self, record: Record) -> list[Change]:
        if record.value is None:
            self.metrics.count("null_value")
            return []
        self.stream_started = True
        side, key = record.side, record.key
        current = self.table.get(key)
        if current is not None:
            left, right = oriented(side, record.value, current[0])
            if accepts(self.config.residual, left, right):
                return [Change._make((_INSERT, key, left, right, record.ts))]
        if self.config.join_type is _INNER:
            return []
        if self.config.reemit_on_late_table_row:
            waiting = self.unmatched.get(key) or []
            waiting.append((record.value, record.ts))
            self.unmatched.put(key, waiting)
        return [padded(side, key, record.value, record.ts)]

    def _update_table(self, record: Record) -> list[Change]:
        if self.config.static_snapshot and self.stream_started:
            self.metrics.count("table_after_snapshot")
            return []
        key = record.key
        if record.value is None:
            self.table.delete(key)
            return []
        self.table.put(key, (record.value, record.ts))
        return self._reemit(key, record)

    def _reemit(self, key, table_record: Record) -> list[Change]:
        """Emit the waiting unmatched stream rows of `key` joined with the new table row."""
        waiting = self.unmatched.get(key)
        if not waiting:
            return []
        out, still_waiting = [], []
        stream_side = self.config.stream_side
        for row, ts in waiting:
            left, right = oriented(stream_side, row, table_record.value)
            if accepts(self.config.residual, left, right):
                out.append(Change(_INSERT, key, left, right, max(ts, table_record.ts)))
            else:
                still_waiting.append((row, ts))
        if still_waiting:
            self.unmatched.put(key, still_waiting)
        else:
            self.unmatched.delete(key)
        return out
