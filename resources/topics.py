"""Reading the newest records of a topic for the UI's previews (the `engine` resource's
`latest_records`): the last records of each partition, exact log ends on Tansu too."""

from datetime import datetime, timezone

from streamjoin.app.engine import Engine
from streamjoin.kafka import admin, rdkafka


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


def topic_tail(engine: Engine, topic: str, limit: int) -> list[dict]:
    """The newest `limit` records of `topic` (by timestamp over its partitions' last records);
    [] when the topic does not exist or is empty."""
    begins, ends = admin.log_ranges(engine.bootstrap, [topic], settings=engine.settings)
    messages = [message for tp, end in ends.items() if end > begins[tp]
                for chunk in rdkafka.read_range(engine.client_config, topic, tp.partition,
                                                max(begins[tp], end - limit), end)
                for message in chunk]
    records = sorted(((m.timestamp()[1], m.partition(), m.offset(), m) for m in messages), reverse=True)
    return [{"partition": partition, "offset": offset, "timestamp": _iso(timestamp),
             "key": m.key(), "value": m.value()} for timestamp, partition, offset, m in records[:limit]]
