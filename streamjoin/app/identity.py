"""What identifies the data a checkpoint read, so a run notices when the same topic names now hold
other data: the cluster id and each input topic's id (the broker mints a new one when a topic is
created; the embedded broker, whose log is in memory, creates every topic anew when it restarts).
Offsets alone cannot tell: new records produced past the checkpoint's offsets look like records
never read, and a new log that ends exactly at the checkpoint looks like nothing new.

The identity is noted beside the checkpoint (`spark.query.read_notes`) at each run. When it
changed, a run refuses (DataLossError naming topic and partition) unless the data-loss policy
says otherwise: `earliest` and `latest` then restart every partition of a changed topic at the
new log's beginning or end, by moving the offsets of the checkpoint's last batch there (Spark
starts its next batch from them); the new identity is noted only after that.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from streamjoin.kafka.client import rdkafka_config
from streamjoin.kafka.offsets import DataLossError, TopicPartition

NOTE = "data_identity"
LOOKUP_TIMEOUT_S = 10.0
NO_ID = "AAAAAAAAAAAAAAAAAAAAAA"  # the all-zero topic id: a broker without topic ids


@dataclass(frozen=True)
class IdentityChange:
    """A partition a checkpoint read, of a topic that is not the one it read any more."""

    tp: TopicPartition
    was: str
    now: str

    def describe(self) -> str:
        return (f"topic {self.tp.topic!r} partition {self.tp.partition}: the topic is not the one the checkpoint "
                f"read (it read {self.was}, the broker now has {self.now}: the topic was deleted and created "
                f"again, or the broker restarted empty or is another cluster)")


def current(client_config: dict, topics: list[str]) -> dict:
    """{"cluster": id or None, "topics": {topic: id}} as the broker names them now (a topic
    without an id is left out: nothing to compare)."""
    admin = AdminClient(rdkafka_config(client_config))
    cluster = admin.describe_cluster(request_timeout=LOOKUP_TIMEOUT_S).result(LOOKUP_TIMEOUT_S).cluster_id
    ids = {}
    for topic, future in admin.describe_topics(TopicCollection(topics), request_timeout=LOOKUP_TIMEOUT_S).items():
        try:
            topic_id = str(future.result(LOOKUP_TIMEOUT_S).topic_id or "")
        except KafkaException:  # not there (yet): created by the run, nothing read from it
            continue
        if topic_id and topic_id != NO_ID:
            ids[topic] = topic_id
    return {"cluster": cluster, "topics": ids}


def changed_topics(noted: dict | None, now: dict) -> dict[str, tuple[str, str]]:
    """{topic: (what was read, what is there now)} for the topics whose identity changed."""
    if not noted:
        return {}
    if noted.get("cluster") and now["cluster"] and noted["cluster"] != now["cluster"]:
        return {topic: (f"cluster {noted['cluster']}", f"cluster {now['cluster']}") for topic in noted["topics"]}
    return {topic: (f"topic id {was}", f"topic id {now['topics'][topic]}") for topic, was in noted["topics"].items()
            if topic in now["topics"] and now["topics"][topic] != was}


def check(checkpoint: Path, now: dict, policy: str, begins: dict, ends: dict) -> None:
    """Refuse (policy fail) or restart (earliest/latest) the partitions of changed topics that the
    checkpoint read, then note `now` as what the checkpoint reads."""
    from streamjoin.spark.query import read_notes, write_notes

    changed = changed_topics(read_notes(checkpoint).get(NOTE), now)
    read = [tp for tp in _last_offsets(checkpoint) if tp.topic in changed]
    if read and policy == "fail":
        raise DataLossError([IdentityChange(tp, *changed[tp.topic]) for tp in sorted(read)])
    if read:
        restart = begins if policy == "earliest" else ends
        _move_offsets(checkpoint, {tp: restart.get(tp, 0) for tp in read})
    if (checkpoint / "offsets").exists() or not read_notes(checkpoint).get(NOTE):
        write_notes(checkpoint, {**read_notes(checkpoint), NOTE: now})


def _offset_files(checkpoint: Path) -> list[Path]:
    """Spark's offset log files whose source offsets a next batch starts from: the last batch's,
    and the one before it when the last batch was not committed (Spark runs it again from there)."""
    batches = sorted(int(p.name) for p in (checkpoint / "offsets").glob("[0-9]*"))
    if not batches:
        return []
    last = batches[-1]
    committed = (checkpoint / "commits" / str(last)).exists()
    return [checkpoint / "offsets" / str(b) for b in batches[-1 if committed else -2:]]


def _last_offsets(checkpoint: Path) -> dict[TopicPartition, int]:
    files = _offset_files(checkpoint)
    if not files:
        return {}
    lines = files[-1].read_text().splitlines()
    return {TopicPartition(topic, int(p)): offset for topic, partitions in json.loads(lines[-1]).items()
            for p, offset in partitions.items()} if len(lines) > 2 else {}


def _move_offsets(checkpoint: Path, restart: dict[TopicPartition, int]) -> None:
    """Set the source offsets of `restart`'s partitions in the offset log files a next batch
    starts from (Spark's format: a version line, the batch's metadata, one line per source)."""
    for path in _offset_files(checkpoint):
        lines = path.read_text().splitlines()
        source = json.loads(lines[-1])
        for tp, offset in restart.items():
            source.setdefault(tp.topic, {})[str(tp.partition)] = offset
        staged = path.with_name(f".{path.name}.streamjoin")
        staged.write_text("\n".join([*lines[:-1], json.dumps(source)]))
        os.replace(staged, path)
        # Hadoop's local file system keeps a checksum beside each file and refuses a file that no
        # longer matches it; without one it reads the file as it is.
        path.with_name(f".{path.name}.crc").unlink(missing_ok=True)
