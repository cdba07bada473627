"""The dead letters of a query, as its tasks write them: one row per record or result the query
could not process (its input's coordinates, the raw or encoded key and value, the reason).

    topic  `<query>-dead-letters`: a JSON value per letter (raw key/value base64), produced by
           the task that rejected it (`task_sink.TaskSink`)
    table  `<delta root>/<query>-dead-letters` (DEAD_LETTER_ARROW_SCHEMA), appended by delta-spark
           from the executors, exactly once per batch (`delta_writes`)

A letter too large for the dead-letter topic (a huge input record's raw bytes) keeps its
coordinates and reason but not its key and value, in both, and says so.
"""

from __future__ import annotations

import base64
import json

import pyarrow as pa

from streamjoin.kafka.limits import record_size

DEAD_LETTER_ARROW_SCHEMA = pa.schema([
    pa.field("source_topic", pa.string()), pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.int64()), pa.field("key", pa.binary()), pa.field("value", pa.binary()),
    pa.field("reason", pa.string()), pa.field("query", pa.string()),
])


def dead_letter_json(row: dict) -> bytes:
    """The dead-letter topic's value: the fields as JSON, raw key/value bytes base64."""
    def b64(data: bytes | None) -> str | None:
        return None if data is None else base64.b64encode(data).decode("ascii")
    return json.dumps({
        "source_topic": row["source_topic"], "partition": row["partition"], "offset": row["offset"],
        "timestamp": row["timestamp"], "key": b64(row["key"]), "value": b64(row["value"]),
        "reason": row["reason"], "query": row["query"],
    }).encode("utf-8")


def within_limit(rows: list[dict], limit: int) -> list[dict]:
    """Dead letters as the dead-letter topic takes them (see the module docstring)."""
    fitting = []
    for row in rows:
        size = record_size(row["key"], dead_letter_json(row), ())
        if size > limit:
            row = {**row, "key": None, "value": None,
                   "reason": f"{row['reason']} (its key and value are left out: {size} bytes as a dead letter, "
                             f"over the {limit} bytes the dead-letter topic takes)"}
        fitting.append(row)
    return fitting
