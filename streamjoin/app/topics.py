"""What orchestration code reads and sets up of Kafka topics through the engine: partition
counts and end offsets (the observable source topics), creating topics, and the newest records
of a topic (the UI's previews: the last records of each partition, exact log ends on Tansu too),
decoded with the topic's format into columns named with their SQL types (`USERID STRING (key)`)."""

from __future__ import annotations

import base64
import json
from datetime import datetime, timezone

from streamjoin.app.engine import Engine
from streamjoin.app.project import Query
from streamjoin.kafka import admin, rdkafka
from streamjoin.plan import nodes as P
from streamjoin.plan.rewrites import walk
from streamjoin.runtime.compiler import source_serde
from streamjoin.serde.formats import DecodeError, SerdeSpec, decode


def iso_millis(ms: int) -> str:
    """A record time (epoch milliseconds) as UTC ISO 8601, to the millisecond."""
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


def end_offsets(engine: Engine, topic: str) -> dict[int, int]:
    return admin.end_offsets(engine.bootstrap, topic, settings=engine.settings)


def create_topics(engine: Engine, partitions_by_topic: dict[str, int]) -> None:
    admin.create_topics(engine.bootstrap, partitions_by_topic, settings=engine.settings)


def describe_topics(engine: Engine, topics: list[str]) -> dict[str, dict]:
    """{topic: {"partitions": n, "end_offsets": {partition: offset}}} for the topics that exist."""
    counts = admin.partition_counts(engine.bootstrap, topics, settings=engine.settings, missing_ok=True)
    return {topic: {"partitions": n, "end_offsets": end_offsets(engine, topic)} for topic, n in counts.items()}


def topic_formats(query: Query) -> dict[str, SerdeSpec]:
    """The record layout of every topic the query reads or writes (sources and output)."""
    formats = {}
    for sub in query.compiled:
        formats.update({n.source.topic: source_serde(n.source) for n in walk(sub.sink) if isinstance(n, P.Source)})
        formats[sub.sink.topic] = sub.sink_serde
    return formats


def raw_text(data: bytes | None) -> str | None:
    """Bytes no format reads: UTF-8 text when they are printable, else hex (marked: no glyphs)."""
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "hex " + data.hex()
    return text if all(c.isprintable() or c in "\t\n\r" for c in text) else "hex " + data.hex()


def typed_columns(spec: SerdeSpec, key: bytes | None, value: bytes | None, ts: int) -> dict:
    """A record decoded with `spec`: one entry per column, named `NAME TYPE` (key columns end with
    `(key)`); a record the format does not read keeps its raw key and value and says why."""
    try:
        decoded = decode(spec, key, value, ts)
    except DecodeError as error:
        return {"key (raw)": raw_text(key), "value (raw)": raw_text(value), "not readable": str(error)}
    row = {f"{name} {kind} (key)": part for (name, kind), part in
           zip(spec.key_columns, decoded.key or (None,) * len(spec.key_columns))}
    if decoded.value is None:
        return {**row, "tombstone": True}
    return row | {f"{name} {kind}": decoded.value.get(name) for name, kind in spec.payload_columns}


def topic_tail(engine: Engine, topic: str, limit: int, spec: SerdeSpec | None = None) -> list[dict]:
    """The newest `limit` records of `topic` (by timestamp over its partitions' last records),
    newest first; [] when the topic does not exist or is empty. With `spec`, key and value are
    decoded into typed columns (`typed_columns`)."""
    begins, ends = admin.log_ranges(engine.bootstrap, [topic], settings=engine.settings)
    messages = [message for tp, end in ends.items() if end > begins[tp]
                for chunk in rdkafka.read_range(engine.client_config, topic, tp.partition,
                                                max(begins[tp], end - limit), end)
                for message in chunk]
    records = sorted(((m.timestamp()[1], m.partition(), m.offset(), m) for m in messages), reverse=True)
    return [{"partition": partition, "offset": offset, "timestamp": iso_millis(timestamp),
             **(typed_columns(spec, m.key(), m.value(), timestamp) if spec else {"key": m.key(), "value": m.value()})}
            for timestamp, partition, offset, m in records[:limit]]


def dead_letter_tail(engine: Engine, query: Query, limit: int) -> list[dict]:
    """The newest dead letters from the dead-letter topic (readable while the query runs): the
    reason and source coordinates, the key and value decoded with the source topic's format as
    far as it reads them (a value that failed to decode is shown as its text or hex)."""
    formats = topic_formats(query)
    rows = []
    for record in topic_tail(engine, engine.dead_letter_topic(query), limit):
        letter = json.loads(record["value"])
        key, value = (None if letter.get(side) is None else base64.b64decode(letter[side]) for side in ("key", "value"))
        spec = formats.get(letter.get("source_topic"))
        row = {"reason": letter.get("reason"), "source_topic": letter.get("source_topic"),
               "partition": letter.get("partition"), "offset": letter.get("offset"),
               "timestamp": iso_millis(letter["timestamp"]) if isinstance(letter.get("timestamp"), int) else None}
        rows.append(row | letter_columns(spec, key, value, letter.get("timestamp") or 0))
    return rows


def letter_columns(spec: SerdeSpec | None, key: bytes | None, value: bytes | None, ts: int) -> dict:
    """The key's typed columns when the source's key format reads it (the value did not decode:
    that is why it is a dead letter), the value as text."""
    if spec is None:
        return {"key (raw)": raw_text(key), "value (raw)": raw_text(value)}
    whole = typed_columns(spec, key, value, ts)
    if "not readable" not in whole:
        return whole
    keyed = typed_columns(spec, key, None, ts)  # the key alone, as a tombstone of it
    keyed.pop("tombstone", None)
    keys = keyed if "not readable" not in keyed else {"key (raw)": raw_text(key)}
    return keys | {"value (raw)": raw_text(value)}
