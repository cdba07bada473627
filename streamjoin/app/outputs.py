"""Where a query's results go besides its Kafka topic: the output Delta table and the dead letters.

A task emits its sink records and, for every record it could not decode or encode, a dead letter
(`streamjoin.spark.query` hands both to the writers here, batch by batch):

    output table  `<delta root>/<query>`: sink records decoded back into rows (key columns,
                  value columns, `__ts`, `__tombstone`); append for a stream, MERGE by key
                  (delete on tombstone) for a table; exactly-once per batch id
    dead letters  topic `<query>-dead-letters` (JSON value, raw key/value base64) and an
                  append-only Delta table `<delta root>/<query>-dead-letters`: source topic,
                  partition, offset, timestamp, raw bytes, reason, query
"""

from __future__ import annotations

import base64
import json

import pyarrow as pa

from streamjoin.kinds import Kind
from streamjoin.delta.tables import DeltaSink
from streamjoin.dialect.types import SqlType
from streamjoin.kafka import admin
from streamjoin.kafka.client import kafka_client_config
from streamjoin.kafka.limits import record_size, topic_limit
from streamjoin.kafka.records import OutRecord
from streamjoin.runtime.compiled import CompiledQuery
from streamjoin.serde.formats import DecodeError, SerdeSpec, decode
from streamjoin.settings import Settings

TOMBSTONE = "__tombstone"
DEAD_LETTER_ARROW_SCHEMA = pa.schema([
    pa.field("source_topic", pa.string()), pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.int64()), pa.field("key", pa.binary()), pa.field("value", pa.binary()),
    pa.field("reason", pa.string()), pa.field("query", pa.string()),
])


class DeltaOutput:
    """The query's output table: sink records decoded into rows (key columns, value columns, `__ts`,
    `__tombstone`); append for a stream, MERGE by key (delete on tombstone) for a table;
    exactly-once per batch id.

    `prepare` converts a batch before anything of it is written anywhere: to the table's own schema
    when it exists (so a later batch can never clash with it), else to the declared column types.
    A record that does not fit comes back as rejected, and the driver keeps it out of Kafka too, so
    the topic and the table always hold the same results."""

    def __init__(self, query: CompiledQuery, path: str, app_id: str | None = None) -> None:
        # Delta's app id: one per checkpoint lifetime (`<query>@<epoch>`, as the replay ids), so a
        # run on a new checkpoint, whose batch ids start at 0 again, is not skipped as done.
        self.query, self.path = query, path
        serde = query.sink_serde
        self.keys = [name for name, _ in serde.key_columns]
        self.sink = DeltaSink(path, mode="merge" if query.sink.kind == Kind.TABLE and self.keys else "append",
                              key_columns=self.keys, app_id=app_id or query.name)
        declared = [*serde.key_columns, *serde.payload_columns]
        self.declared = {name: arrow_type(t) for name, t in declared if t.name != "ANY"}

    def prepare(self, records: pa.Table) -> tuple[pa.Table, list[tuple[int, str]]]:
        """(rows that fit, [(record index, reason)] of those that do not)."""
        rows, rejected = [], []
        for index, record in enumerate(zip(*(records.column(c).to_pylist() for c in ("key", "value", "ts")))):
            try:
                rows.append((index, decoded_row(self.query.sink_serde, *record)))
            except DecodeError as error:
                rejected.append((index, f"output record cannot be read back for {self.path}: {error}"))
        schema = self._schema([row for _, row in rows])
        try:
            return pa.Table.from_pylist([row for _, row in rows], schema=schema), rejected
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass  # find the rows at fault, one by one
        good = []
        for index, row in rows:
            try:
                pa.Table.from_pylist([row], schema=schema)
                good.append(row)
            except (pa.ArrowException, TypeError, ValueError, OverflowError) as error:
                rejected.append((index, f"output row does not fit the Delta table {self.path}: {error}"))
        return pa.Table.from_pylist(good, schema=schema), sorted(rejected)

    def write(self, rows: pa.Table, batch_id: int) -> int | None:
        return self.sink.write_batch(rows, batch_id)

    def _schema(self, rows: list[dict]) -> pa.Schema | None:
        existing = self.sink.schema()
        if existing is not None:
            return existing
        if not rows:
            return None
        inferred = pa.Table.from_pylist(rows[:1]).schema  # order of the columns, types of ANY ones
        return pa.schema([pa.field(f.name, self.declared.get(f.name, pa.int64() if f.name == "__ts" else f.type))
                          for f in inferred])


def decoded_rows(query: CompiledQuery, records: pa.Table) -> list[dict]:
    """Sink records (key/value bytes) as output rows (see `decoded_row`)."""
    return [decoded_row(query.sink_serde, *record)
            for record in zip(*(records.column(c).to_pylist() for c in ("key", "value", "ts")))]


def decoded_row(serde: SerdeSpec, key: bytes | None, value: bytes | None, ts: int) -> dict:
    """A sink record as an output row: key columns, value columns, `__ts`, and `__tombstone` for a
    deletion."""
    decoded = decode(serde, key, value, ts)
    keys = [name for name, _ in serde.key_columns]
    row = dict(zip(keys, decoded.key or (None,) * len(keys)))
    row.update(decoded.value or {})
    return {**row, "__ts": ts, TOMBSTONE: decoded.value is None}


def dead_letter_writer(query_name: str, topic: str, path: str, bootstrap: str, settings: Settings):
    """Writes a batch of a task's dead-letter rows (src_topic, src_partition, src_offset, ts, key,
    value, reason) to the query's dead-letter topic and table."""
    def write(dead: pa.Table, batch_id: int) -> int:
        frame = pa.table({
            "source_topic": dead.column("src_topic"), "partition": dead.column("src_partition"),
            "offset": dead.column("src_offset"), "timestamp": dead.column("ts"),
            "key": dead.column("key"), "value": dead.column("value"), "reason": dead.column("reason"),
            "query": pa.array([query_name] * dead.num_rows)})
        return write_dead_letters(frame, batch_id, topic, path, bootstrap, settings)

    return write


def dead_letter_json(row: dict) -> bytes:
    """The dead-letter topic's value: the fields as JSON, raw key/value bytes base64."""
    def b64(data: bytes | None) -> str | None:
        return None if data is None else base64.b64encode(data).decode("ascii")
    return json.dumps({
        "source_topic": row["source_topic"], "partition": row["partition"], "offset": row["offset"],
        "timestamp": row["timestamp"], "key": b64(row["key"]), "value": b64(row["value"]),
        "reason": row["reason"], "query": row["query"],
    }).encode("utf-8")


def write_dead_letters(table: pa.Table, batch_id: int, topic: str, delta_path: str, bootstrap: str,
                       settings: Settings | None = None) -> int:
    """Write one micro-batch of dead letters (DEAD_LETTER_ARROW_SCHEMA) to the topic and the Delta
    table; return how many there were (0 for a replay already written).

    The batch is recorded in the Delta table last, under app id `dead-letters:<query>`: a replay
    whose Delta commit landed is skipped entirely (a crash between the produce and that commit
    produces the batch to the topic again, with the same records)."""
    table = table.cast(DEAD_LETTER_ARROW_SCHEMA)
    if table.num_rows == 0:
        return 0
    queries = sorted(set(table.column("query").to_pylist()))
    sink = DeltaSink(delta_path, mode="append", app_id=f"dead-letters:{','.join(queries)}")
    committed = sink.committed_batch()
    if committed is not None and committed >= batch_id:
        return 0
    rows = _within_limit(table.to_pylist(), topic_limit(kafka_client_config(settings, bootstrap), topic))
    admin.produce(bootstrap, topic, [
        OutRecord(key=row["key"], value=dead_letter_json(row), timestamp_ms=row["timestamp"])
        for row in rows], settings=settings)
    sink.write_batch(pa.Table.from_pylist(rows, schema=DEAD_LETTER_ARROW_SCHEMA), batch_id)
    return table.num_rows


def _within_limit(rows: list[dict], limit: int) -> list[dict]:
    """Dead letters as the dead-letter topic takes them: one too large for it (a huge input
    record's raw bytes) keeps its coordinates and reason but not its key and value, and says so."""
    fitting = []
    for row in rows:
        size = record_size(row["key"], dead_letter_json(row), ())
        if size > limit:
            row = {**row, "key": None, "value": None,
                   "reason": f"{row['reason']} (its key and value are left out: {size} bytes as a dead letter, "
                             f"over the {limit} bytes the dead-letter topic takes)"}
        fitting.append(row)
    return fitting


def arrow_type(t: SqlType) -> pa.DataType:
    """The Arrow type a decoded column has (Spark maps it to the matching Spark SQL type).

    Timestamps are instants in UTC: Arrow timestamp[us, UTC] is Spark's TimestampType.
    """
    simple = {
        "STRING": pa.string(), "BYTES": pa.binary(), "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(),
        "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(), "FLOAT": pa.float32(),
        "DOUBLE": pa.float64(),
    }
    if t.name in simple:
        return simple[t.name]
    if t.name == "DECIMAL":
        return pa.decimal128(t.precision, t.scale)
    if t.is_timestamp:
        return pa.timestamp("us", tz="UTC")
    if t.name == "ANY":
        raise ValueError("a column of type ANY has no Arrow type; declare its type to decode it in Spark")
    if t.name == "ARRAY":
        return pa.list_(arrow_type(t.elements[0]))
    if t.name == "MAP":
        return pa.map_(arrow_type(t.elements[0]), arrow_type(t.elements[1]))
    return pa.struct([pa.field(n, arrow_type(f)) for n, f in t.fields])
