"""How large a record a topic takes, so a result the broker would refuse becomes a dead letter
(with its size and the limit) instead of a failed produce that stops the query, replayed and
failing again at every restart.

A topic's limit is its `max.message.bytes` (DescribeConfigs; a broker that leaves an unset
config out, as Tansu does, means Kafka's default). The limit counts the whole record batch, so a
record is measured with its framing, its headers and the replay header the writer adds. Lookups
are kept for a while per process: every write of every task asks for its topic's limit.
"""

from __future__ import annotations

import time
from typing import Iterable, Sequence

from concurrent.futures import TimeoutError as FutureTimeout

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource

from streamjoin.kafka.client import KafkaUnreachable, client_timeout_s, rdkafka_config

KAFKA_DEFAULT_LIMIT = 1_048_588  # max.message.bytes of a topic that sets none (Kafka's default)
# A record batch's header (61 bytes) + one record's varint framing (at most 21) + the replay
# header the writer adds ("streamjoin.id" and "<query>@<epoch>:<batch>:<task>.<seq>").
FRAMING_BYTES = 61 + 21 + 256
HEADER_FRAMING_BYTES = 10  # a header's two length varints
KEEP_S = 30.0  # how long a looked-up limit is used before asking again

_known: dict[tuple[str, str], tuple[float, int]] = {}


def topic_limit(client_config: dict, topic: str) -> int:
    """The largest record batch `topic` takes, in bytes."""
    key = (",".join(client_config.get("bootstrap_servers", ())), topic)
    now = time.monotonic()
    if key in _known and now - _known[key][0] < KEEP_S:
        return _known[key][1]
    limit = _look_up(client_config, topic)
    _known[key] = (now, limit)
    return limit


def _look_up(client_config: dict, topic: str) -> int:
    admin, timeout_s = AdminClient(rdkafka_config(client_config)), client_timeout_s(client_config)
    (future,) = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)],
                                       request_timeout=timeout_s).values()
    try:
        entry = future.result(timeout_s + 1).get("max.message.bytes")
    except FutureTimeout:
        raise KafkaUnreachable(",".join(client_config["bootstrap_servers"]), timeout_s) from None
    except KafkaException as error:
        if error.args[0].code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
            raise KafkaUnreachable(",".join(client_config["bootstrap_servers"]), timeout_s) from None
        return KAFKA_DEFAULT_LIMIT  # not allowed to describe it (ACLs): the limit every topic has by default
    return int(entry.value) if entry is not None and entry.value else KAFKA_DEFAULT_LIMIT


def record_size(key: bytes | None, value: bytes | None, headers: Iterable | None) -> int:
    """An upper bound of the bytes a record takes alone in a record batch."""
    return (FRAMING_BYTES + len(key or b"") + len(value or b"")
            + sum(HEADER_FRAMING_BYTES + len(name.encode()) + len(data or b"") for name, data in headers or ()))


def oversized(limits: dict[str, int], topics: Sequence[str], keys: Sequence, values: Sequence,
              headers: Sequence) -> list[tuple[int, str]]:
    """[(row, reason)] of the rows their topic's limit (`limits`) refuses."""
    if not any(headers) and FRAMING_BYTES + max(map(len, filter(None, keys)), default=0) \
            + max(map(len, filter(None, values)), default=0) <= min(limits.values(), default=0):
        return []  # no header, and the largest key and value would fit together (no call per row)
    refused = []
    for row, (topic, key, value, given) in enumerate(zip(topics, keys, values, headers)):
        size = record_size(key, value, given)
        if size > limits[topic]:
            refused.append((row, f"result of {size} bytes is over the {limits[topic]} bytes topic {topic!r} "
                                 f"takes (max.message.bytes); its value is left out of this dead letter"))
    return refused
