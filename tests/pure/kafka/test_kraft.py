"""The embedded Apache Kafka's settings, without starting it: a cluster id the storage tool takes
(22 URL-safe base64 characters, never a leading "-", which it would read as an option); the client
listener as the security settings say (plaintext, SASL, TLS, both), always beside the brokers' own
plaintext listener; a cluster's nodes all voters, its topics with three replicas and two in sync;
no password in a listener's or keystore's printed form."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from streamjoin.kafka import embedded, kraft
from streamjoin.settings import BrokerKind, Settings

NODE = kraft.Node(1, port=9092, internal_port=9094, controller_port=9093)
USER = kraft.SaslUser("alice", "pw")
KEYSTORE = kraft.Keystore(Path("/k/broker.p12"), "kspw")


def test_cluster_ids_never_look_like_options():
    ids = [kraft.random_cluster_id() for _ in range(2_000)]  # ~1 in 64 random ids starts with "-"
    assert all(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{21}", cluster_id) for cluster_id in ids)


@dataclass
class Case:
    listener: kraft.ClientListener
    present: tuple[str, ...]
    absent: tuple[str, ...]


CASES = {
    "plaintext": Case(kraft.ClientListener(), ("CLIENT:PLAINTEXT",), ("sasl", "ssl")),
    "sasl": Case(kraft.ClientListener("SASL_PLAINTEXT", USER),
                 ("CLIENT:SASL_PLAINTEXT", "listener.name.client.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
                  'user_alice="pw"'), ("ssl",)),
    "ssl": Case(kraft.ClientListener("SSL", keystore=KEYSTORE),
                ("CLIENT:SSL", "listener.name.client.ssl.keystore.location=/k/broker.p12",
                 "listener.name.client.ssl.keystore.password=kspw", "ssl.keystore.type=PKCS12"), ("sasl",)),
    "sasl_ssl": Case(kraft.ClientListener("SASL_SSL", USER, KEYSTORE),
                     ("CLIENT:SASL_SSL", 'user_alice="pw"', "ssl.keystore.password=kspw"), ()),
}


@pytest.mark.parametrize("name", CASES)
def test_the_client_listener_speaks_the_configured_protocol(tmp_path, name):
    case = CASES[name]
    text = kraft._properties(tmp_path, NODE, case.listener)
    assert "listeners=CLIENT://127.0.0.1:9092,INTERNAL://127.0.0.1:9094,CONTROLLER://127.0.0.1:9093" in text
    assert "inter.broker.listener.name=INTERNAL" in text and "INTERNAL:PLAINTEXT" in text
    assert "controller.quorum.voters=1@127.0.0.1:9093" in text and "log.retention.ms=-1" in text
    assert "default.replication.factor=1" in text and "min.insync.replicas=1" in text
    assert all(part in text for part in case.present), text
    assert not any(part in text for part in case.absent), text
    assert "pw" not in repr(case.listener), "no password in a printed listener"


def test_a_three_node_cluster_has_three_voters_three_replicas_two_in_sync(tmp_path):
    quorum = [kraft.Node(n, 9000 + n, 9100 + n, 9200 + n) for n in (1, 2, 3)]
    text = kraft._properties(tmp_path, quorum[1], kraft.ClientListener(), quorum)
    assert "node.id=2" in text
    assert "controller.quorum.voters=1@127.0.0.1:9201,2@127.0.0.1:9202,3@127.0.0.1:9203" in text
    for setting in ("default.replication.factor=3", "min.insync.replicas=2", "transaction.state.log.min.isr=2",
                    "offsets.topic.replication.factor=3", "transaction.state.log.replication.factor=3"):
        assert setting in text


def test_a_node_for_other_hosts_binds_and_advertises_their_address_for_every_listener(tmp_path):
    node = kraft.Node(1, 9092, 9094, 9093, host="10.1.2.1")
    text = kraft._properties(tmp_path, node, kraft.ClientListener())
    assert "listeners=CLIENT://10.1.2.1:9092,INTERNAL://10.1.2.1:9094,CONTROLLER://10.1.2.1:9093\n" in text
    assert "advertised.listeners=CLIENT://10.1.2.1:9092,INTERNAL://10.1.2.1:9094\n" in text
    assert "controller.quorum.voters=1@10.1.2.1:9093" in text and "127.0.0.1" not in text


@pytest.mark.parametrize("args", [("SASL_SSL", USER), ("SSL",), ("SASL_PLAINTEXT",), ("TLS",)],
                         ids=["sasl-ssl-no-keystore", "ssl-no-keystore", "sasl-no-user", "unknown"])
def test_an_incomplete_listener_is_refused(args):
    with pytest.raises(ValueError, match=args[0]):
        kraft.ClientListener(*args)


def test_the_settings_choose_the_embedded_listener():
    settings = Settings(broker_kind=BrokerKind.KAFKA, security_protocol="sasl_ssl", sasl_username="alice",
                        sasl_password="pw", broker_keystore=Path("/k/broker.p12"), broker_keystore_password="kspw")
    assert embedded.client_listener(settings) == kraft.ClientListener("SASL_SSL", USER, KEYSTORE)
    assert "kspw" not in repr(settings) and "pw'" not in repr(settings)
    with pytest.raises(ValueError, match="STREAMJOIN_BROKER_KEYSTORE"):
        embedded.client_listener(Settings(security_protocol="SSL"))
