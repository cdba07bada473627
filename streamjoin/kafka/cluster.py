"""Several Apache Kafka nodes on loopback forming one KRaft cluster (`kraft`: every node a broker
and a voter of the controller quorum; with three nodes, three replicas of every topic and two in
sync to acknowledge a write), for the fault tests: a node can be stopped (SIGTERM, or SIGKILL as
a crash) and started again on its ports and log, and the leader of a partition looked up.

Each node's log, settings and output live under `directory`/node-<id>; the nodes die with the
process that started them (`services.launch`, not detached).
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from streamjoin import services
from streamjoin.kafka import kraft

READY_TIMEOUT_S = 120.0  # three cold JVMs on a loaded 2-core machine


@dataclass
class LoopbackCluster:
    directory: Path
    size: int = 3
    listener: kraft.ClientListener = kraft.ClientListener()
    nodes: list[kraft.Node] = field(default_factory=list)
    _processes: dict[int, int] = field(default_factory=dict)  # node id -> pid
    _cluster_id: str = field(default_factory=kraft.random_cluster_id)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{node.port}" for node in self.nodes)

    def start(self) -> str:
        """Starts every node (a quorum needs a majority up to elect a controller) and waits until
        the brokers all answer; the bootstrap servers."""
        if not self.nodes:
            self.nodes = [kraft.Node(n, services.free_port(), services.free_port(), services.free_port())
                          for n in range(1, self.size + 1)]
        for node in self.nodes:
            self.start_node(node.node_id, wait=False)
        self.await_brokers(self.size)
        return self.bootstrap

    def start_node(self, node_id: int, wait: bool = True) -> None:
        node = self._node(node_id)
        state_dir = self.directory / f"node-{node_id}"
        state_dir.mkdir(parents=True, exist_ok=True)
        args = kraft.launch_args(state_dir, node, self.listener, self.nodes, self._cluster_id)
        self._processes[node_id] = services.launch(args, state_dir / "kafka.log", detached=False).pid
        if wait:
            self.await_brokers(len(self._processes))

    def stop_node(self, node_id: int, crash: bool = False) -> None:
        """Stops one node: SIGTERM (a controlled shutdown: it hands its leaderships over) or, with
        `crash`, SIGKILL."""
        pid = self._processes.pop(node_id)
        if crash:
            os.kill(pid, signal.SIGKILL)
        services.terminate(pid, kraft.MARKER)

    def stop(self) -> None:
        """Stops every node at once: stopped in turn, the last ones each wait out their shutdown
        timeout for a controller quorum that is already gone (three here: 10 s in turn, 5 s at once)."""
        with ThreadPoolExecutor(max(len(self._processes), 1)) as pool:
            list(pool.map(self.stop_node, list(self._processes)))

    def leader(self, topic: str, partition: int) -> int:
        """The node id leading a partition now."""
        from confluent_kafka.admin import AdminClient

        metadata = AdminClient({"bootstrap.servers": self.bootstrap}).list_topics(topic, timeout=20)
        return metadata.topics[topic].partitions[partition].leader

    def await_brokers(self, count: int) -> None:
        """Waits until `count` brokers are registered and answer (RuntimeError after READY_TIMEOUT_S)."""
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                brokers = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0}).list_topics(timeout=2).brokers
                if len(brokers) >= count:
                    return
            except KafkaException:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the {self.size}-node Kafka cluster at {self.bootstrap} did not get {count} brokers up "
                           f"within {READY_TIMEOUT_S:g} s; see {self.directory}/node-*/kafka.log")

    def _node(self, node_id: int) -> kraft.Node:
        return next(node for node in self.nodes if node.node_id == node_id)
