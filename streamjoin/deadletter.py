"""Decode a Kafka-source frame in one Python pass; records that do not decode become dead letters.

`decode_frame(df, spec, query)` runs `streamjoin.formats.decode` over every row with mapInArrow
and returns two frames split by a filter on the same decoded frame:

    good_df: the spec's decoded columns (key columns, then value columns; PROCTIME ones omitted)
             + __ts (event time, epoch ms, long), __timestamp (Kafka record timestamp, ms, long),
               __topic (string), __partition (int), __offset (long),
               __tombstone (boolean: the Kafka value was null: a table delete / null-value record)
    dead_df: DEAD_LETTER_SCHEMA: source_topic, partition, offset, timestamp (record ts, epoch ms),
             key, value (the raw bytes), reason, query

Both frames derive from one mapInArrow: to decode once when using both, call
`decode_rows(df, spec)`, persist that frame, then `split_dead_letters(decoded, query)`.
The query never fails on a bad record: it is routed to the dead letters and counted
(`write_dead_letters` returns the count).
Dead letters go to a topic (JSON value, raw bytes base64) and/or an append-only Delta table; a
replayed batch already in the Delta table is skipped (`write_dead_letters`).
"""

from __future__ import annotations

import base64
import json
from typing import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from streamjoin.delta import DeltaSink, to_arrow
from streamjoin.formats import DecodedRecord, DecodeError, SerdeSpec, decode
from streamjoin.sqltypes import arrow_type

_ERROR, _RAW_KEY, _RAW_VALUE = "__error", "__raw_key", "__raw_value"
_META_FIELDS = [
    pa.field("__ts", pa.int64()), pa.field("__timestamp", pa.int64()), pa.field("__topic", pa.string()),
    pa.field("__partition", pa.int32()), pa.field("__offset", pa.int64()), pa.field("__tombstone", pa.bool_()),
]
META_COLUMNS = tuple(f.name for f in _META_FIELDS)
DEAD_LETTER_ARROW_SCHEMA = pa.schema([
    pa.field("source_topic", pa.string()), pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.int64()), pa.field("key", pa.binary()), pa.field("value", pa.binary()),
    pa.field("reason", pa.string()), pa.field("query", pa.string()),
])
_DDL_TYPES = {pa.string(): "string", pa.int32(): "int", pa.int64(): "bigint", pa.binary(): "binary"}
DEAD_LETTER_SCHEMA = ", ".join(f"{f.name} {_DDL_TYPES[f.type]}" for f in DEAD_LETTER_ARROW_SCHEMA)
_KAFKA_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp"]


def decoded_arrow_schema(spec: SerdeSpec) -> pa.Schema:
    """The schema of the single decoded frame: columns, metadata, error and raw bytes."""
    columns = [pa.field(name, arrow_type(t)) for name, t in spec.decoded_columns]
    raw = [pa.field(_ERROR, pa.string()), pa.field(_RAW_KEY, pa.binary()), pa.field(_RAW_VALUE, pa.binary())]
    return pa.schema(columns + _META_FIELDS + raw)


def decode_batch(spec: SerdeSpec, batch: pa.RecordBatch) -> pa.RecordBatch:
    """Decode one Arrow batch with the Kafka source columns into `decoded_arrow_schema(spec)`.

    Only the decode itself is a Python loop; metadata columns are passed through as Arrow arrays.
    """
    schema = decoded_arrow_schema(spec)
    # Spark hands timestamps as microseconds; Kafka's are milliseconds.
    record_ts = pc.divide(batch.column("timestamp").cast(pa.int64()), 1000)
    records: list[DecodedRecord | None] = []
    errors: list[str | None] = []
    for key_bytes, value_bytes, ts_ms in zip(batch.column("key").to_pylist(), batch.column("value").to_pylist(),
                                             record_ts.to_pylist()):
        try:
            records.append(decode(spec, key_bytes, value_bytes, ts_ms))
            errors.append(None)
        except DecodeError as e:
            records.append(None)
            errors.append(e.reason)
    no_key, no_value = (None,) * len(spec.key_columns), {}
    keys = [r.key if r is not None and r.key is not None else no_key for r in records]
    values = [r.value if r is not None and r.value is not None else no_value for r in records]
    columns: dict[str, pa.Array] = {}
    for i, (name, _) in enumerate(spec.key_columns):
        columns[name] = [k[i] for k in keys]
    for name, t in spec.value_columns:
        if not t.proctime:
            columns[name] = [v.get(name) for v in values]
    is_error = pa.array([e is not None for e in errors])
    columns.update({
        "__ts": pc.if_else(is_error, record_ts, pa.array([r.ts if r else 0 for r in records], pa.int64())),
        "__timestamp": record_ts, "__topic": batch.column("topic"), "__partition": batch.column("partition"),
        "__offset": batch.column("offset"), "__tombstone": pc.is_null(batch.column("value")),
        _ERROR: errors,  # raw bytes only travel with dead letters
        _RAW_KEY: pc.if_else(is_error, batch.column("key"), pa.nulls(len(batch), pa.binary())),
        _RAW_VALUE: pc.if_else(is_error, batch.column("value"), pa.nulls(len(batch), pa.binary())),
    })
    return pa.RecordBatch.from_arrays([pa.array(columns[f.name], f.type) if isinstance(columns[f.name], list)
                                       else columns[f.name].cast(f.type) for f in schema], schema=schema)


def decode_rows(df, spec: SerdeSpec):
    """The single decoded frame (decoded columns, metadata, __error, raw bytes of bad records).
    Persist it in foreachBatch, then `split_dead_letters`: one Python decode pass per batch."""
    from pyspark.sql.pandas.types import from_arrow_schema

    def decode_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            yield decode_batch(spec, batch)

    return df.select(*_KAFKA_COLUMNS).mapInArrow(decode_batches, from_arrow_schema(decoded_arrow_schema(spec)))


def split_dead_letters(decoded, query_name: str):
    """(good_df, dead_df) from `decode_rows`' frame."""
    from pyspark.sql import functions as F

    good = decoded.where(F.col(_ERROR).isNull()).drop(_ERROR, _RAW_KEY, _RAW_VALUE)
    dead = decoded.where(F.col(_ERROR).isNotNull()).select(
        F.col("__topic").alias("source_topic"), F.col("__partition").alias("partition"),
        F.col("__offset").alias("offset"), F.col("__timestamp").alias("timestamp"),
        F.col(_RAW_KEY).alias("key"), F.col(_RAW_VALUE).alias("value"),
        F.col(_ERROR).alias("reason"), F.lit(query_name).alias("query"))
    return good, dead


def decode_frame(df, spec: SerdeSpec, query_name: str):
    """(good_df, dead_df) from a frame with the Kafka source schema; see the module docstring.
    Both derive from one unpersisted decode: using both runs it twice (see `decode_rows`)."""
    return split_dead_letters(decode_rows(df, spec), query_name)


def dead_letter_json(row: dict) -> bytes:
    """The dead-letter topic's value: the fields as JSON, raw key/value bytes base64."""
    def b64(data: bytes | None) -> str | None:
        return None if data is None else base64.b64encode(data).decode("ascii")
    return json.dumps({
        "source_topic": row["source_topic"], "partition": row["partition"], "offset": row["offset"],
        "timestamp": row["timestamp"], "key": b64(row["key"]), "value": b64(row["value"]),
        "reason": row["reason"], "query": row["query"],
    }).encode("utf-8")


def write_dead_letters(batch_df, batch_id: int, topic: str | None, delta_path: str | None, *,
                       bootstrap: str | None = None) -> int:
    """Write one micro-batch of dead letters (DEAD_LETTER_SCHEMA; a Spark or Arrow frame) to the
    topic and/or the Delta table; return how many there were (0 for a replay already written).

    With a Delta table the batch is recorded there last, under app id `dead-letters:<query>`: a
    replay whose Delta commit landed is skipped entirely. The topic alone is at-least-once (a
    crash between produce and commit produces the batch again on replay)."""
    table = to_arrow(batch_df).cast(DEAD_LETTER_ARROW_SCHEMA)
    if table.num_rows == 0:
        return 0
    queries = sorted(set(table.column("query").to_pylist()))
    sink = None if delta_path is None else DeltaSink(delta_path, mode="append", app_id=f"dead-letters:{','.join(queries)}")
    committed = None if sink is None else sink.committed_batch()
    if committed is not None and committed >= batch_id:
        return 0
    if topic is not None:
        if bootstrap is None:
            raise ValueError("a dead-letter topic needs the Kafka bootstrap servers")
        from streamjoin.kafka.admin import produce
        from streamjoin.kafka.records import OutRecord

        produce(bootstrap, topic, [
            OutRecord(key=row["key"], value=dead_letter_json(row), timestamp_ms=row["timestamp"])
            for row in table.to_pylist()])
    if sink is not None:
        sink.write_batch(table, batch_id)
    return table.num_rows
