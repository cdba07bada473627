"""Reading the newest records of a topic for the UI's previews (the `engine` resource's
`latest_records`): the last records of each partition, exact log ends on Tansu too."""

import time
from datetime import datetime, timezone

from kafka import KafkaConsumer

from streamjoin.app.engine import Engine
from streamjoin.kafka import admin

READ_TIMEOUT_S = 10.0


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")


def topic_tail(engine: Engine, topic: str, limit: int) -> list[dict]:
    """The newest `limit` records of `topic` (by timestamp over its partitions' last records);
    [] when the topic does not exist or is empty."""
    begins, ends = admin.log_ranges(engine.bootstrap, [topic], settings=engine.settings)
    wanted = {tp: (max(begins[tp], end - limit), end) for tp, end in ends.items()
              if end > begins[tp]}
    if not wanted:
        return []
    consumer = KafkaConsumer(**engine.client_config, enable_auto_commit=False, group_id=None,
                             auto_offset_reset="earliest")
    records = []
    try:
        consumer.assign(list(wanted))
        for tp, (start, _) in wanted.items():
            consumer.seek(tp, start)
        left, deadline = dict(wanted), time.monotonic() + READ_TIMEOUT_S
        while left and time.monotonic() < deadline:
            for tp, batch in consumer.poll(timeout_ms=200).items():
                records += [r for r in batch if r.offset < wanted[tp][1]]
                if batch and batch[-1].offset >= wanted[tp][1] - 1:
                    left.pop(tp, None)
    finally:
        consumer.close()
    records.sort(key=lambda r: (r.timestamp, r.partition, r.offset), reverse=True)
    return [{"partition": r.partition, "offset": r.offset, "timestamp": _iso(r.timestamp),
             "key": r.key, "value": r.value} for r in records[:limit]]


