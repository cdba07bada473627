"""The embedded Apache Kafka's settings, without starting it: a cluster id the storage tool takes
(22 URL-safe base64 characters, never a leading "-", which it would read as an option), and the
client listener with or without SASL."""

from __future__ import annotations

import re

from streamjoin.kafka import kraft


def test_cluster_ids_never_look_like_options():
    ids = [kraft.random_cluster_id() for _ in range(2_000)]  # ~1 in 64 random ids starts with "-"
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", cluster_id) for cluster_id in ids)


def test_a_plain_broker_has_one_plaintext_client_listener(tmp_path):
    text = kraft._properties(tmp_path, port=9092, controller_port=9093, sasl=None)
    assert "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093" in text
    assert "sasl" not in text and "log.retention.ms=-1" in text


def test_a_sasl_broker_takes_plain_and_scram_for_its_user_on_the_client_port(tmp_path):
    user = kraft.SaslUser("alice", "pw", internal_port=9094)
    text = kraft._properties(tmp_path, port=9092, controller_port=9093, sasl=user)
    assert "SASL_PLAINTEXT://127.0.0.1:9092" in text and "PLAINTEXT://127.0.0.1:9094" in text
    assert "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512" in text and 'user_alice="pw"' in text
