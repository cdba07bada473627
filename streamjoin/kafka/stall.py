"""How long a read or a write of the data path may go without progress, and what a stall means
(`Stall`): the brokers gone (KafkaUnreachable, one line naming them, within the client timeout)
or a broker slow or a leader moving (an error only past STALL_TIMEOUT_S)."""

from __future__ import annotations

import time

from confluent_kafka import KafkaException

from streamjoin.kafka.client import KafkaUnreachable, client_timeout_s

# No progress for this long while a broker answers (a leader moving after one was lost) -> error.
STALL_TIMEOUT_S = 30.0
PROBE_TIMEOUT_S = 1.0  # the metadata request that tells an outage from a slow broker


class Stall:
    """How long a read or a write has made no progress, and what that means: with no broker
    answering a metadata request (an outage) past the client timeout (STREAMJOIN_KAFKA_TIMEOUT_S),
    KafkaUnreachable, the one line naming the servers; while a broker answers (a leader moving
    after another was lost, a slow broker), an error only past STALL_TIMEOUT_S.

    Timeline, timeout 5 s: 0 s last record; 5 s still nothing: one metadata request (1 s at most);
    no answer: KafkaUnreachable at ~6 s; an answer: asked again each second, given up at 30 s."""

    def __init__(self, client_config: dict, handle, topic: str | None = None) -> None:
        self.servers = ",".join(client_config["bootstrap_servers"])
        self.timeout_s = client_timeout_s(client_config)
        self.handle, self.topic = handle, topic  # the client to ask; a topic it knows (never all topics)
        self.progressed()

    def progressed(self) -> None:
        self.last_progress = self.next_probe = time.monotonic()

    def expired(self) -> bool:
        """True once the wait is over for a broker that answers; KafkaUnreachable for none."""
        now = time.monotonic()
        idle = now - self.last_progress
        if idle > self.timeout_s and now >= self.next_probe:
            self.next_probe = now + PROBE_TIMEOUT_S
            try:
                self.handle.list_topics(self.topic, timeout=PROBE_TIMEOUT_S)
            except KafkaException:
                raise self.unreachable() from None
        return idle > max(STALL_TIMEOUT_S, self.timeout_s)

    def unreachable(self) -> KafkaUnreachable:
        return KafkaUnreachable(self.servers, self.timeout_s)
