"""Where a query's first run starts reading each input topic: Flink's `'scan.startup.mode'` of the
table that reads it (plan.startup), as Spark's `startingOffsets` JSON. Spark uses it only when the
checkpoint holds no offsets yet; a checkpointed run goes on from its checkpoint.

- `earliest-offset` (the default): each partition's first offset; `latest-offset`: its end;
- `timestamp`: the first record at or after the timestamp (the end where none is);
- `specific-offsets`: the offsets listed, a partition not listed from its first offset;
- `group-offsets`: the offsets the table's `properties.group.id` committed; a partition without
  one as `properties.auto.offset.reset` says (earliest, latest), else the run is refused naming it.

A topic two tables read with different modes is refused (one start per topic)."""

from __future__ import annotations

import json
from typing import Mapping

from streamjoin.kafka.client import rdkafka_config
from streamjoin.kafka.offsets import OffsetClient, TopicPartition
from streamjoin.plan import nodes as P
from streamjoin.plan.rewrites import walk
from streamjoin.plan.startup import EARLIEST, Startup
from streamjoin.runtime.compiled import CompiledQuery

EARLIEST_OFFSET, LATEST_OFFSET = -2, -1  # Spark's JSON placeholders


class StartupError(ValueError):
    """A first run cannot start where a table says: one line naming table, topic and partition."""


def startups(query: CompiledQuery) -> dict[str, tuple[str, Startup]]:
    """{topic: (table, its startup)} of the query's input topics (a repartition topic: earliest)."""
    found: dict[str, tuple[str, Startup]] = {}
    for node in walk(query.sink):
        if isinstance(node, P.Source):
            source = node.source
            earlier = found.setdefault(source.topic, (source.name, source.startup))
            if earlier[1] != source.startup:
                raise StartupError(f"topic {source.topic} is read by {earlier[0]} from {earlier[1].describe()} and by "
                                   f"{source.name} from {source.startup.describe()}: one start per topic")
    return {topic: found.get(topic, ("", EARLIEST)) for topic in query.input_topics}


def start_offsets(table: str, startup: Startup, tps: list[TopicPartition], committed: Mapping[TopicPartition, int],
                  by_timestamp: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Each partition's start as Spark's JSON writes it (-2 earliest, -1 latest, else an offset):
    `committed` holds the group's offsets (group-offsets; negative = none), `by_timestamp` the
    offsets the timestamp selects."""
    if startup.mode == "latest-offset":
        return dict.fromkeys(tps, LATEST_OFFSET)
    if startup.mode == "timestamp":
        return {tp: by_timestamp[tp] for tp in tps}
    if startup.mode == "specific-offsets":
        listed = dict(startup.offsets)
        unknown = sorted(set(listed) - {tp.partition for tp in tps})
        if unknown:
            raise StartupError(f"table {table}: 'scan.startup.specific-offsets' names partition {unknown[0]}, which "
                               f"topic {tps[0].topic} does not have ({len(tps)} partitions)")
        return {tp: listed.get(tp.partition, EARLIEST_OFFSET) for tp in tps}
    if startup.mode == "group-offsets":
        return {tp: _committed_or_reset(table, startup, tp, committed.get(tp, -1)) for tp in tps}
    return dict.fromkeys(tps, EARLIEST_OFFSET)


def _committed_or_reset(table: str, startup: Startup, tp: TopicPartition, offset: int) -> int:
    if offset >= 0:
        return offset
    if startup.offset_reset == "none":
        raise StartupError(f"table {table}: consumer group {startup.group_id!r} committed no offset for topic "
                           f"{tp.topic} partition {tp.partition}; set 'properties.auto.offset.reset' to earliest or "
                           "latest to start such a partition there")
    return EARLIEST_OFFSET if startup.offset_reset == "earliest" else LATEST_OFFSET


def starting_offsets(query: CompiledQuery, client_config: dict) -> str:
    """Spark's `startingOffsets` for the query's first run (JSON by topic and partition)."""
    result: dict[str, dict[str, int]] = {}
    with OffsetClient(client_config) as client:
        for topic, (table, startup) in startups(query).items():
            tps = sorted(client.topic_partitions([topic]))
            committed = _committed(client_config, startup.group_id, tps) if startup.mode == "group-offsets" else {}
            by_timestamp = (client.for_timestamp(tps, startup.timestamp_ms, client.ends(tps))
                            if startup.mode == "timestamp" else {})
            offsets = start_offsets(table, startup, tps, committed, by_timestamp)
            result[topic] = {str(tp.partition): offset for tp, offset in offsets.items()}
    return json.dumps(result)


def _committed(client_config: dict, group: str, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The offsets `group` committed (negative: none), asked without joining the group."""
    from confluent_kafka import Consumer, TopicPartition as RdTopicPartition

    consumer = Consumer({**rdkafka_config(client_config), "group.id": group, "enable.auto.commit": False})
    try:
        found = consumer.committed([RdTopicPartition(tp.topic, tp.partition) for tp in tps],
                                   timeout=client_config.get("bootstrap_timeout_ms", 10_000) / 1000)
    finally:
        consumer.close()
    return {TopicPartition(rd.topic, rd.partition): rd.offset for rd in found}
