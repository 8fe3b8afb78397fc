"""Partitions added to a streams group's source topic on a real Apache Kafka 4.4 broker: two instances of the
project's Kafka Streams application (stateless topology: one subtopology, a task per input partition) are stable on
three partitions; the topic grows to five (kafka-python's admin, CreatePartitions). The coordinator notices on a
heartbeat, bumps the group's epoch with a new hash of its topics' metadata under the same topology, and assigns
five tasks. The core's generation for that epoch names the cause `metadata_change`, from `__consumer_offsets` alone
and from the coordinator's log alone, with the new tasks as Kafka's streams group tool describes them, and judged
by the sticky task assignor with no task mismatched."""
from __future__ import annotations

import pytest

from helpers.eventually import eventually
from helpers import streams_group_kafka as sk

pytestmark = pytest.mark.integration

TOPICS, GROUP, CLIENTS = ("grow-in", "grow-out"), "streams-grow-1", ("g-a", "g-b")


@pytest.fixture(scope="module")
def streams_broker():
    yield from sk.module_broker(TOPICS, 3)


def _stable(bootstrap: str, tasks: int):
    """The broker's members and state once both members hold their target's active tasks, `tasks` in all."""
    st = sk.state(bootstrap, GROUP)
    if st is None or st[0] != "Stable" or st[1] != st[2] or st[3] != len(CLIENTS):
        return None
    ms = sk.members(bootstrap, GROUP)
    active = sorted(t for m in ms.values() for t in m["tasks"].get("active", ()))
    ok = all(m["epoch"] == st[1] and m["tasks"].get("active") == m["tasks"].get("target-active")
             for m in ms.values()) and active == [("0", p) for p in range(tasks)]
    return (ms, st) if ok else None


def test_partitions_added_to_the_source_topic_are_the_epochs_cause(streams_broker, tmp_path):
    from kafka.admin import KafkaAdminClient, NewPartitions

    bootstrap = streams_broker.bootstrap
    procs = {c: sk.start_instance(bootstrap, GROUP, c, TOPICS, tmp_path) for c in CLIENTS}
    try:
        eventually(lambda: _stable(bootstrap, 3), 120, lambda: f"two stable members: {sk.members(bootstrap, GROUP)}")
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_partitions({TOPICS[0]: NewPartitions(total_count=5)})
        finally:
            admin.close()
        grown, st = eventually(lambda: _stable(bootstrap, 5), 120,
                               lambda: f"five tasks: {sk.members(bootstrap, GROUP)}")
    finally:
        sk.end_scenario(procs, streams_broker, tmp_path)
    for source, records in (("__consumer_offsets", sk.replay(bootstrap, GROUP)),
                            ("coordinator log", sk.log_replay(streams_broker, GROUP))):
        by_epoch = {g["generation"]: g for g in records if g["kind"] == "generation"}
        g = by_epoch.get(st[1])
        assert g is not None, (source, st, sorted(by_epoch))
        assert [c["cause"] for c in g["causes"]] == ["metadata_change"], (source, g["causes"])
        assert "a source topic's partitions added" in g["causes"][0]["reason"], (source, g["causes"])
        # the epochs before it: joins, and no metadata change named
        assert all(c["cause"] != "metadata_change" for e, gen in by_epoch.items() if e < st[1]
                   for c in gen["causes"]), source
        assert sorted(g["members"]) == sorted(grown), source
        if source == "__consumer_offsets":  # (the log gives the tasks as well; the judgement needs the topology)
            assert {mid: sorted(map(tuple, t["active"])) for mid, t in g["tasks"].items()} == \
                sk.active_tasks_of(grown), source
            assert g["mismatched_tasks"] == 0, (source, g)
