"""Apache Kafka as the embedded broker: KRaft nodes (each broker and controller in one JVM) from
Maven Central's jars (`streamjoin.maven`), one node's log under STREAMJOIN_HOME/broker/kafka; or
several nodes on loopback forming one cluster (`cluster.LoopbackCluster`: every node a voter of
the controller quorum, topics with three replicas, two in sync to acknowledge a write).

Each node has a client listener (`ClientListener`: PLAINTEXT, or SASL and/or TLS), a plaintext
listener the brokers talk to each other on, and its controller listener. With SASL credentials
(`SaslUser`, from the STREAMJOIN_KAFKA_SASL_* settings) the client listener takes the mechanisms
PLAIN and SCRAM-SHA-512 for that one user (the SCRAM credential is written when the log directory
is formatted); with a keystore (`Keystore`, PKCS12, e.g. one `tls.make_certificate` wrote) it
speaks TLS (SSL, SASL_SSL).

Set for one machine and a few clients: no time-based retention (records keep their event times,
and documents' examples and test cases are dated years back: Kafka's 7-day default deletes such a
log within minutes, active segment too); the internal topics (consumer offsets, transactions,
share groups) with one partition, so the first group or transaction does not create fifty
partitions; a small heap; two network and I/O threads. Its data outlives a restart, as any Kafka
broker's does (Tansu keeps its log in memory only).
"""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from streamjoin import maven

VERSION = "4.1.1"
# The broker, and the binding that sends its SLF4J logging to log4j2 (without one it logs nothing).
ARTIFACTS = (maven.Artifact("org.apache.kafka", "kafka_2.13", VERSION),
             maven.Artifact("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"))
MARKER = b"kafka.Kafka"  # the main class, in the broker's command line
JVM_OPTIONS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]

Protocol = Literal["PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL"]
PROTOCOLS: tuple[Protocol, ...] = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")

_NODE = """\
process.roles=broker,controller
node.id={node_id}
controller.quorum.voters={voters}
controller.listener.names=CONTROLLER
inter.broker.listener.name=INTERNAL
listeners=CLIENT://{host}:{port},INTERNAL://{host}:{internal_port},CONTROLLER://{host}:{controller_port}
advertised.listeners=CLIENT://{host}:{port},INTERNAL://{host}:{internal_port}
listener.security.protocol.map=CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,CLIENT:{protocol}
log.dirs={data}
num.partitions=1
num.network.threads=2
num.io.threads=2
default.replication.factor={replicas}
min.insync.replicas={min_isr}
offsets.topic.replication.factor={replicas}
offsets.topic.num.partitions=1
transaction.state.log.replication.factor={replicas}
transaction.state.log.min.isr={min_isr}
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor={replicas}
share.coordinator.state.topic.min.isr={min_isr}
group.initial.rebalance.delay.ms=0
log.retention.ms=-1
"""

_SASL = """\
listener.name.client.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512
listener.name.client.plain.sasl.jaas.config=\
org.apache.kafka.common.security.plain.PlainLoginModule required user_{user}="{password}";
listener.name.client.scram-sha-512.sasl.jaas.config=\
org.apache.kafka.common.security.scram.ScramLoginModule required;
"""

_TLS = """\
listener.name.client.ssl.keystore.type=PKCS12
listener.name.client.ssl.keystore.location={path}
listener.name.client.ssl.keystore.password={password}
listener.name.client.ssl.key.password={password}
"""

# Kafka logs through log4j2: warnings and errors to the broker's log file (stdout, redirected).
_LOG4J2 = """\
Configuration:
  Appenders:
    Console: {name: STDOUT, PatternLayout: {pattern: "[%d] %p %m (%c)%n"}}
  Loggers:
    Root: {level: WARN, AppenderRef: [{ref: STDOUT}]}
"""


@dataclass(frozen=True)
class SaslUser:
    """The one user a SASL-secured embedded broker knows (PLAIN and SCRAM-SHA-512)."""

    name: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class Keystore:
    """A PKCS12 keystore holding the broker's key and certificate, and its password."""

    path: Path
    password: str = field(repr=False)


@dataclass(frozen=True)
class ClientListener:
    """What the clients' listener speaks: its security protocol, the SASL user (SASL_*) and the
    keystore (SSL, SASL_SSL)."""

    protocol: Protocol = "PLAINTEXT"
    user: SaslUser | None = None
    keystore: Keystore | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"Kafka security protocol {self.protocol!r} is not one of {', '.join(PROTOCOLS)}")
        if self.protocol.startswith("SASL") and self.user is None:
            raise ValueError(f"a {self.protocol} listener needs a SASL user")
        if self.protocol.endswith("SSL") and self.keystore is None:
            raise ValueError(f"a {self.protocol} listener needs a keystore (the broker's TLS certificate)")


@dataclass(frozen=True)
class Node:
    """One KRaft node's id, address and ports (clients', brokers' own, controller's). The
    address is loopback unless the clients are on other hosts (a cluster's executors): then one
    they all reach, which the node binds and advertises."""

    node_id: int
    port: int
    internal_port: int
    controller_port: int
    host: str = "127.0.0.1"


def voters(nodes: list[Node]) -> str:
    """The static controller quorum: every node a voter."""
    return ",".join(f"{node.node_id}@{node.host}:{node.controller_port}" for node in nodes)


def _properties(data: Path, node: Node, listener: ClientListener, quorum: list[Node] | None = None) -> str:
    """One node's server.properties; `quorum`: every node of its cluster (default: itself alone).
    A cluster of three or more keeps three replicas of every topic and needs two in sync."""
    quorum = quorum or [node]
    replicas = min(3, len(quorum))
    text = _NODE.format(node_id=node.node_id, voters=voters(quorum), host=node.host, port=node.port,
                        internal_port=node.internal_port, controller_port=node.controller_port,
                        protocol=listener.protocol, data=data, replicas=replicas, min_isr=max(1, replicas - 1))
    if listener.user is not None:
        text += _SASL.format(user=listener.user.name, password=listener.user.password)
    if listener.keystore is not None:
        text += _TLS.format(path=listener.keystore.path, password=listener.keystore.password)
    return text


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding, never starting with
    "-" (the storage tool would read such an id as an option; Kafka's own ids avoid it too)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def launch_args(state_dir: Path, node: Node, listener: ClientListener = ClientListener(),
                quorum: list[Node] | None = None, cluster_id: str | None = None) -> list[str]:
    """The command that runs one node, after writing its settings and, on first use, formatting
    its log directory (KRaft's metadata log starts from a formatted directory, with the cluster's
    id: the same on every node of a cluster; a SCRAM user is written there)."""
    data = state_dir / "kafka-data"
    properties = state_dir / "server.properties"
    properties.write_text(_properties(data, node, listener, quorum))
    properties.chmod(0o600)  # it may hold the SASL and keystore passwords
    logging = state_dir / "log4j2.yaml"
    logging.write_text(_LOG4J2)
    classpath = os.pathsep.join(str(jar) for artifact in ARTIFACTS for jar in maven.resolve(artifact))
    java = [maven.java_binary(), *JVM_OPTIONS, f"-Dlog4j2.configurationFile={logging}", "-cp", classpath]
    if not (data / "meta.properties").exists():
        user = listener.user
        scram = [] if user is None else ["--add-scram", f"SCRAM-SHA-512=[name={user.name},password={user.password}]"]
        formatted = subprocess.run([*java, "kafka.tools.StorageTool", "format", "--ignore-formatted",
                                    "-t", cluster_id or random_cluster_id(), "-c", str(properties), *scram],
                                   capture_output=True, text=True, timeout=120)
        if formatted.returncode:  # said without the command line, which may hold the SCRAM password
            raise RuntimeError(f"formatting the Kafka log directory {data} failed: "
                               f"{formatted.stderr.strip().splitlines()[-1:] or formatted.returncode}")
    return [*java, "kafka.Kafka", str(properties)]
