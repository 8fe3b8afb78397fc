"""describe_groups on real brokers: Apache Kafka 4.4.0 (the run's broker) with a KIP-848 group of confluent-kafka
consumers (group.protocol=consumer) and a classic group of kafka-python consumers, and 3.9.2 (a broker of this
module) where every group is described through DescribeGroups. Each description is checked against what the
group's own clients say of themselves: member ids, assignments, member epochs (librdkafka's group metadata), the
assignor."""
from __future__ import annotations

import dataclasses
import threading

import pytest

from helpers.eventually import eventually
from helpers.raw_answer import raw_answer

from rebalance_monitor.broker_facts import consumer_group_describe as cgd
from rebalance_monitor.broker_facts import describe
from rebalance_monitor.broker_facts.describe import BrokerUnreachable, DecodeError, describe_groups
from rebalance_monitor.broker_facts.descriptions import sorted_partitions
from rebalance_monitor.testing.broker import Broker
from rebalance_monitor.testing.kafka_install import KAFKA_CLASSIC_VERSION

confluent_kafka = pytest.importorskip("confluent_kafka", reason="confluent-kafka is not installed")

pytestmark = pytest.mark.integration

PARTITIONS = 6


class Members:
    """The consumers of one group, each polling on its own thread, and what each says of itself:
    {client id: (member id, sorted assignment, generation)}; for a KIP-848 member the generation is its member
    epoch (librdkafka's consumer group metadata)."""

    def __init__(self, bootstrap: str, group: str, topic: str, kip848: bool, **conf):
        self.bootstrap, self.group, self.topic, self.kip848, self.conf = bootstrap, group, topic, kip848, conf
        self.views: dict[str, tuple] = {}
        self.stop = threading.Event()
        self.threads: list[threading.Thread] = []

    def add(self, client_id: str) -> None:
        run = self._confluent if self.kip848 else self._kafka_python
        t = threading.Thread(target=run, args=(client_id,), daemon=True, name=f"member-{client_id}")
        self.threads.append(t)
        t.start()

    def _confluent(self, client_id: str) -> None:
        from rebalance_monitor.instrument.confluent import decode_group_metadata

        c = confluent_kafka.Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group,
                                      "client.id": client_id, "group.protocol": "consumer", **self.conf})
        c.subscribe([self.topic])
        while not self.stop.is_set():
            c.poll(0.2)
            meta = decode_group_metadata(c.consumer_group_metadata()) or {}
            self.views[client_id] = (c.memberid(), sorted_partitions((p.topic, p.partition) for p in c.assignment()),
                                     meta.get("generation"))
        c.close()

    def _kafka_python(self, client_id: str) -> None:
        from kafka import KafkaConsumer

        from rebalance_monitor.workload.kafka_python_join import settle_finished_join, wait_for_metadata_snapshot

        c = KafkaConsumer(bootstrap_servers=self.bootstrap, group_id=self.group, client_id=client_id,
                          session_timeout_ms=6000, heartbeat_interval_ms=1000, **self.conf)
        settle_finished_join(c)  # kafka-python 3.0's join workarounds, as the workload's members have them
        c.subscribe([self.topic])
        wait_for_metadata_snapshot(c, [self.topic], 15, self.stop)
        while not self.stop.is_set():
            c.poll(timeout_ms=200)
            meta = c.group_metadata()
            self.views[client_id] = (meta.member_id, sorted_partitions((p.topic, p.partition) for p in c.assignment()),
                                     meta.generation_id)
        c.close()

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)


@pytest.fixture()
def admin(broker):
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap, client_id="rm-test-describe",
                              request_timeout_ms=15000)
    yield client
    client.close()


def agreed(client, group: str, members: Members, n: int):
    """The group's description once it is stable with `n` members and says of each what the member's client says
    of itself (and, for a KIP-848 group, the target is the assignment); else None."""
    d = describe_groups(client, [group])[group]
    views = dict(members.views)
    if d.error or d.state != "Stable" or len(d.members) != n or len(views) != n:
        return None
    all_parts = []
    for m in d.members:
        member_id, assignment, generation = views.get(m.client_id, (None, None, None))
        if (m.member_id, m.assignment) != (member_id, assignment) or not assignment:
            return None
        if members.kip848 and (m.target_assignment != m.assignment or m.member_epoch != generation
                               or m.member_epoch != d.group_epoch):
            return None
        all_parts += assignment
    return d if sorted(all_parts) == [(members.topic, p) for p in range(PARTITIONS)] else None


def test_a_kip848_group_is_described_as_its_members_see_it(broker, unique, admin):
    topic, group = f"t-{unique}", f"g-{unique}"
    broker.create_topics({topic: PARTITIONS})
    members = Members(broker.bootstrap, group, topic, kip848=True)
    try:
        for name in ("m0", "m1"):
            members.add(name)
        two = eventually(lambda: agreed(admin, group, members, 2), 90, lambda: f"two members agreeing: "
                         f"{describe_groups(admin, [group])[group]} vs {members.views}")
        assert (two.group_type, two.protocol_type, two.protocol) == ("consumer", "consumer", "uniform")  # the default
        assert (two.api, two.api_version, two.coordinator) == ("ConsumerGroupDescribe", 1, 1)
        assert two.group_epoch == two.assignment_epoch == two.generation
        for m in two.members:
            assert (m.subscribed_topics, m.member_type, m.group_instance_id) == ((topic,), "consumer", None)
            assert m.client_host.endswith("127.0.0.1")

        members.add("m2")
        three = eventually(lambda: agreed(admin, group, members, 3), 90, "three members agreeing")
        assert three.group_epoch > two.group_epoch  # the join bumped the group epoch
        assert sorted(m.client_id for m in three.members) == ["m0", "m1", "m2"]

        # the bytes the broker sends for it: the strict decoder gives the same description, and each cut of them
        # is a DecodeError
        body = raw_answer(broker.bootstrap, cgd.request([group]), 1)
        decoded = cgd.described(cgd.decode_response(body, 1).groups[0], 1, 1)
        assert decoded == describe_groups(admin, [group])[group] == three
        for n in range(0, len(body), 7):
            with pytest.raises(DecodeError):
                cgd.decode_response(body[:n], 1)
    finally:
        members.close()


def test_the_assignor_the_members_ask_for_is_the_groups(broker, unique, admin):
    topic, group = f"t-{unique}", f"g-{unique}"
    broker.create_topics({topic: PARTITIONS})
    members = Members(broker.bootstrap, group, topic, kip848=True, **{"group.remote.assignor": "range"})
    try:
        members.add("r0")
        members.add("r1")
        d = eventually(lambda: agreed(admin, group, members, 2), 90, "two range members agreeing")
        assert d.protocol == "range"
        # range: each member a contiguous half of the partitions
        assert sorted(tuple(p for _, p in m.assignment) for m in d.members) == [(0, 1, 2), (3, 4, 5)]
    finally:
        members.close()


def test_a_classic_group_is_described_as_its_members_see_it(broker, unique, admin):
    topic, group = f"t-{unique}", f"g-{unique}"
    broker.create_topics({topic: PARTITIONS})
    members = Members(broker.bootstrap, group, topic, kip848=False)
    try:
        members.add("c0")
        members.add("c1")
        d = eventually(lambda: agreed(admin, group, members, 2), 90, lambda: f"two classic members agreeing: "
                       f"{describe_groups(admin, [group])[group]} vs {members.views}")
        assert (d.group_type, d.protocol_type, d.protocol) == ("classic", "consumer", "range")
        assert (d.api, d.api_version) == ("DescribeGroups", 6)
        # the clients know their generation; DescribeGroups does not carry it
        assert all(gen >= 1 for _, _, gen in members.views.values())
        assert (d.generation, d.group_epoch, d.assignment_epoch) == (None, None, None)
        for m in d.members:
            assert (m.subscribed_topics, m.target_assignment, m.member_epoch, m.decode_error) == ((topic,), None,
                                                                                                 None, None)
    finally:
        members.close()


def test_a_group_kafka_4_does_not_have(admin, unique):
    d = describe_groups(admin, [f"none-{unique}"])[f"none-{unique}"]
    assert (d.error, d.api, d.api_version, d.group_type, d.members) == ("GROUP_ID_NOT_FOUND", "DescribeGroups", 6,
                                                                        None, ())
    assert d.error_message == f"Group none-{unique} not found."


@pytest.fixture(scope="module")
def broker_39(tmp_path_factory):
    log = tmp_path_factory.mktemp("broker-3.9") / "broker.log"
    broker = Broker(version=KAFKA_CLASSIC_VERSION, log_path=str(log)).start()
    yield broker
    broker.stop()


@pytest.fixture()
def admin_39(broker_39):
    from kafka.admin import KafkaAdminClient

    client = KafkaAdminClient(bootstrap_servers=broker_39.bootstrap, client_id="rm-test-describe",
                              request_timeout_ms=15000)
    yield client
    client.close()


def test_kafka_3_9_groups_are_described_with_describe_groups(broker_39, admin_39, unique, monkeypatch):
    """3.9.2 has ListGroups v5 (it names the group classic) and lists API 69, which answers UNSUPPORTED_VERSION for
    every group unless the broker runs the new coordinator: a group of unknown type falls back to DescribeGroups."""
    topic, group = f"t-{unique}", f"g-{unique}"
    broker_39.create_topics({topic: PARTITIONS})
    members = Members(broker_39.bootstrap, group, topic, kip848=False)
    try:
        members.add("c0")
        members.add("c1")
        d = eventually(lambda: agreed(admin_39, group, members, 2), 90, "two classic members agreeing on 3.9")
        assert (d.group_type, d.protocol, d.api, d.api_version, d.generation) == ("classic", "range",
                                                                                  "DescribeGroups", 5, None)
        gone = describe_groups(admin_39, [f"none-{unique}"])[f"none-{unique}"]
        assert (gone.state, gone.error, gone.members) == ("Dead", None, ())  # before KIP-1043: Dead, no error

        asked = []
        plain_send = describe._send
        monkeypatch.setattr(describe, "_group_types", lambda manager, node: None)  # as if ListGroups were v4
        monkeypatch.setattr(describe, "_send", lambda m, r, n: asked.append(r.name) or plain_send(m, r, n))
        fallback = describe_groups(admin_39, [group])[group]
        assert asked == ["FindCoordinatorRequest", "ConsumerGroupDescribeRequest", "DescribeGroupsRequest"]
        assert fallback == dataclasses.replace(d, group_type=None)
    finally:
        members.close()


def test_a_broker_gone_raises_broker_unreachable(broker_39, admin_39):
    describe_groups(admin_39, ["any"])  # connected
    broker_39.kill()
    try:
        with pytest.raises(BrokerUnreachable, match="Request to"):
            describe_groups(admin_39, ["any"])
    finally:
        broker_39.start()
