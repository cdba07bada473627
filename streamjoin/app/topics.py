"""What orchestration code reads and sets up of Kafka topics through the engine: partition
counts and end offsets (the observable source topics), creating topics, and the newest records
of a topic (the UI's previews: the last records of each partition, exact log ends on Tansu too)."""

from __future__ import annotations

from datetime import datetime, timezone

from streamjoin.app.engine import Engine
from streamjoin.kafka import admin, rdkafka


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


def topic_tail(engine: Engine, topic: str, limit: int) -> list[dict]:
    """The newest `limit` records of `topic` (by timestamp over its partitions' last records),
    newest first; [] when the topic does not exist or is empty."""
    begins, ends = admin.log_ranges(engine.bootstrap, [topic], settings=engine.settings)
    messages = [message for tp, end in ends.items() if end > begins[tp]
                for chunk in rdkafka.read_range(engine.client_config, topic, tp.partition,
                                                max(begins[tp], end - limit), end)
                for message in chunk]
    records = sorted(((m.timestamp()[1], m.partition(), m.offset(), m) for m in messages), reverse=True)
    return [{"partition": partition, "offset": offset, "timestamp": iso_millis(timestamp),
             "key": m.key(), "value": m.value()} for timestamp, partition, offset, m in records[:limit]]
