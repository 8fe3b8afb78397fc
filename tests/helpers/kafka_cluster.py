"""Three (or more) Apache Kafka KRaft nodes, each broker and controller, on loopback ports: for the tests of
coordinator moves and broker failures. The nodes share one cluster id and one static controller quorum;
`__consumer_offsets` is replicated to every node, so a group's coordinator moves when its broker dies.

    with KafkaCluster(size=3) as cluster:
        cluster.bootstrap                  # every node's address
        node = cluster.coordinator_of("g") # the node whose __consumer_offsets partition leads group g
        cluster.kill(node.node_id); cluster.start(node.node_id)
"""
from __future__ import annotations

import signal
from dataclasses import dataclass, field
from pathlib import Path

from rebalance_monitor.testing.broker import Broker, new_cluster_id
from rebalance_monitor.testing.processes import free_port, stop_process_groups
from rebalance_monitor.testing.kafka_install import KAFKA_VERSION


@dataclass
class KafkaCluster:
    size: int = 3
    version: str = KAFKA_VERSION
    host: str = "127.0.0.1"
    settings: dict = field(default_factory=dict)
    nodes: list[Broker] = field(default_factory=list)

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    @property
    def coordinator_logs(self) -> list[Path]:
        return [n.coordinator_log for n in self.nodes]

    @property
    def offsets_partitions(self) -> int:
        from rebalance_monitor.testing.broker import TEST_BROKER_SETTINGS

        return int({**TEST_BROKER_SETTINGS, **self.settings}["offsets.topic.num.partitions"])

    def start(self, node_id: int | None = None, timeout_s: float = 120.0) -> "KafkaCluster":
        """Start every node (the first call), or one node again after `kill`."""
        if node_id is not None:
            self.node(node_id).start(timeout_s)
            return self
        cluster_id = new_cluster_id()
        ports = [(free_port(self.host), free_port(self.host)) for _ in range(self.size)]
        voters = ",".join(f"{i + 1}@{self.host}:{c}" for i, (_p, c) in enumerate(ports))
        replication = min(3, self.size)
        settings = {"min.insync.replicas": "1", **self.settings}
        self.nodes = [Broker(host=self.host, port=p, controller_port=c, node_id=i + 1, voters=voters,
                             cluster_id=cluster_id, replication=replication, version=self.version,
                             settings=settings, heap="512m")
                      for i, (p, c) in enumerate(ports)]
        try:
            for n in self.nodes:
                n.launch()
            for n in self.nodes:
                n.wait_ready(timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def node(self, node_id: int) -> Broker:
        return next(n for n in self.nodes if n.node_id == node_id)

    def kill(self, node_id: int, sig: int = signal.SIGKILL) -> None:
        self.node(node_id).kill(sig)

    def coordinator_of(self, group: str, timeout_s: float = 30.0) -> Broker:
        """The node that leads the group's `__consumer_offsets` partition (its group coordinator)."""
        import time

        from kafka.admin import KafkaAdminClient

        from rebalance_monitor.core.coordinator_placement import offsets_partition_for

        part = offsets_partition_for(group, self.offsets_partitions)
        deadline = time.monotonic() + timeout_s
        live = ",".join(n.bootstrap for n in self.nodes if n.proc is not None)
        while time.monotonic() < deadline:
            try:
                # a fresh client each try: after a node died, its metadata may still send requests there
                admin = KafkaAdminClient(bootstrap_servers=live, client_id="rm-cluster-admin",
                                         request_timeout_ms=5000)
                try:
                    topics = admin.describe_topics(["__consumer_offsets"])
                finally:
                    admin.close()
            except Exception:  # noqa: BLE001 - a node going down: ask again
                time.sleep(0.5)
                continue
            for t in topics:
                for p in t.get("partitions") or []:
                    if p.get("partition_index", p.get("partition")) == part:
                        leader = p.get("leader_id", p.get("leader", -1))
                        if leader is not None and leader >= 0 and self.node(leader).proc is not None:
                            return self.node(leader)
            time.sleep(0.5)
        raise TimeoutError(f"no leader for __consumer_offsets-{part} within {timeout_s}s")

    def stop(self) -> None:
        """Stop every node together (one stopped alone keeps waiting for a quorum the others would give up),
        then remove their directories."""
        stop_process_groups([n.proc for n in self.nodes], timeout_s=20.0)
        for n in self.nodes:
            n.stop()

    def __enter__(self) -> "KafkaCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
