"""Apache Kafka as the embedded broker: one KRaft node (broker and controller in one JVM) from
Maven Central's jars (`streamjoin.maven`), its log under STREAMJOIN_HOME/broker/kafka.

With SASL credentials (`SaslUser`, from the STREAMJOIN_KAFKA_SASL_* settings) its client listener
takes SASL_PLAINTEXT only, with the mechanisms PLAIN and SCRAM-SHA-512 for that one user (the SCRAM
credential is written when the log directory is formatted); the broker's own traffic stays on a
plaintext listener of its own.

Set for one machine and a few clients: no time-based retention (records keep their event times,
and documents' examples and test cases are dated years back: Kafka's 7-day default deletes such a
log within minutes, active segment too); the internal topics (consumer offsets, transactions,
share groups) with one replica and one partition, so the first group or transaction does not
create fifty partitions; a small heap; two network and I/O threads. Its data outlives a restart,
as any Kafka broker's does (Tansu keeps its log in memory only).
"""

from __future__ import annotations

import base64
import os
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from streamjoin import maven

VERSION = "4.1.1"
# The broker, and the binding that sends its SLF4J logging to log4j2 (without one it logs nothing).
ARTIFACTS = (maven.Artifact("org.apache.kafka", "kafka_2.13", VERSION),
             maven.Artifact("org.apache.logging.log4j", "log4j-slf4j-impl", "2.24.3"))
MARKER = b"kafka.Kafka"  # the main class, in the broker's command line
JVM_OPTIONS = ["-Xms128m", "-Xmx512m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]

_LISTENERS = """\
listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{port}
"""

_SASL_LISTENERS = """\
listeners=PLAINTEXT://127.0.0.1:{internal_port},SASL_PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}
advertised.listeners=PLAINTEXT://127.0.0.1:{internal_port},SASL_PLAINTEXT://127.0.0.1:{port}
sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512
listener.name.sasl_plaintext.plain.sasl.jaas.config=\
org.apache.kafka.common.security.plain.PlainLoginModule required user_{user}="{password}";
listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config=\
org.apache.kafka.common.security.scram.ScramLoginModule required;
"""

_SETTINGS = """\
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{controller_port}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT
log.dirs={data}
num.partitions=1
num.network.threads=2
num.io.threads=2
offsets.topic.replication.factor=1
offsets.topic.num.partitions=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.ms=-1
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
    """The one user a SASL-secured embedded broker knows (PLAIN and SCRAM-SHA-512), and the
    plaintext port the broker talks to itself on."""

    name: str
    password: str
    internal_port: int


def _properties(data: Path, port: int, controller_port: int, sasl: SaslUser | None) -> str:
    if sasl is None:
        listeners = _LISTENERS.format(port=port, controller_port=controller_port)
    else:
        listeners = _SASL_LISTENERS.format(port=port, controller_port=controller_port, user=sasl.name,
                                           password=sasl.password, internal_port=sasl.internal_port)
    return _SETTINGS.format(controller_port=controller_port, data=data) + listeners


def random_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding, never starting with
    "-" (the storage tool would read such an id as an option; Kafka's own ids avoid it too)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cluster_id.startswith("-"):
            return cluster_id


def launch_args(state_dir: Path, port: int, controller_port: int, sasl: SaslUser | None = None) -> list[str]:
    """The command that runs the broker, after writing its settings and, on first use, formatting
    its log directory (KRaft's metadata log starts from a formatted directory; a SCRAM user is
    written there)."""
    data = state_dir / "kafka-data"
    properties = state_dir / "server.properties"
    properties.write_text(_properties(data, port, controller_port, sasl))
    properties.chmod(0o600)  # it holds the SASL password
    logging = state_dir / "log4j2.yaml"
    logging.write_text(_LOG4J2)
    classpath = os.pathsep.join(str(jar) for artifact in ARTIFACTS for jar in maven.resolve(artifact))
    java = [maven.java_binary(), *JVM_OPTIONS, f"-Dlog4j2.configurationFile={logging}", "-cp", classpath]
    if not (data / "meta.properties").exists():
        scram = [] if sasl is None else ["--add-scram", f"SCRAM-SHA-512=[name={sasl.name},password={sasl.password}]"]
        subprocess.run([*java, "kafka.tools.StorageTool", "format", "--ignore-formatted",
                        "-t", random_cluster_id(), "-c", str(properties), *scram],
                       check=True, capture_output=True, timeout=120)
    return [*java, "kafka.Kafka", str(properties)]
