"""Partitions added to a streams group's source topic (KIP-1071): the coordinator bumps the group's epoch with a new
hash of its topics' metadata while its topology stays, and no member came or went; the core names that bump's cause
`metadata_change`, from `__consumer_offsets` (StreamsGroupMetadata: the hash, and the topology epoch it validated
on 4.4) or from the coordinator's log (`Bumped streams group epoch to E with metadata hash H and validated topic
epoch T`). A join, or a new topology, changes the hash as well: their own cause stands then."""
from __future__ import annotations

from helpers.events import causes_of, ev, kinds, run

G = "app"
TOPOLOGY = ev("streams_topology", 10, G, topology_epoch=0, subtopologies=[
    {"subtopology_id": "0", "source_topics": ["in"], "state_changelog_topics": []}])


def join(ts: int, member: str, topology_epoch: int = 0) -> dict:
    return ev("join", ts, G, member_id=member, client_id=f"{member}-consumer", protocols=["sticky"], topics=[],
              group_protocol="streams", process_id=f"p-{member}", topology_epoch=topology_epoch)


def epoch(ts: int, n: int, tasks: dict, metadata_hash: int, topology_epoch: int | None = 0, before=()) -> list:
    """Epoch `n`: `before`, the bump (with the hash), the target's completion, each member's active tasks."""
    out = list(before) + [ev("rebalance_started", ts, G, generation=n - 1, reason=f"streams group epoch bumped to {n}",
                             metadata_hash=metadata_hash, topology_epoch=topology_epoch),
                          ev("generation_completed", ts + 1, G, generation=n, protocol="sticky", leader=None,
                             protocol_type="streams")]
    for i, (member, active) in enumerate(sorted(tasks.items())):
        out.append(ev("sync", ts + 2 + i, G, member_id=member, generation=n, protocol="sticky", leader=None,
                      assignment=[], member_state="stable", active_tasks=[["0", p] for p in active],
                      standby_tasks=[], warmup_tasks=[]))
    return out



def generations(events) -> dict:
    return {g["generation"]: g for g in kinds(run(events), "generation")}


BASE = [TOPOLOGY, *epoch(1000, 1, {"m1": (0, 1)}, 111, before=[join(1000, "m1")]),
        *epoch(2000, 2, {"m1": (0,), "m2": (1,)}, 111, before=[join(2000, "m2")])]


def test_partitions_added_to_a_source_topic_are_the_bumps_cause():
    gens = generations([*BASE, *epoch(5000, 3, {"m1": (0, 2), "m2": (1, 3)}, 222)])
    assert causes_of(gens[2]) == ["member_joined"]
    assert causes_of(gens[3]) == ["metadata_change"], gens[3]["causes"]
    assert "a source topic's partitions added" in gens[3]["causes"][0]["reason"]
    assert "111 -> 222" in gens[3]["causes"][0]["reason"]


def test_the_same_hash_or_the_first_one_known_names_no_metadata_change():
    gens = generations([*BASE, *epoch(5000, 3, {"m1": (0,), "m2": (1,)}, 111)])
    assert "metadata_change" not in causes_of(gens[3])
    first = generations([TOPOLOGY, *epoch(1000, 1, {"m1": (0, 1)}, 111, before=[join(1000, "m1")])])
    assert causes_of(first[1]) == ["member_joined"]


def test_a_join_or_a_new_topology_keeps_its_own_cause():
    joined = generations([*BASE, *epoch(5000, 3, {"m1": (0,), "m2": (1,), "m3": (2,)}, 333,
                                        before=[join(5000, "m3")])])
    assert causes_of(joined[3]) == ["member_joined"]
    # a new topology epoch (its new source topics change the hash): not the topics' metadata alone
    retopo = generations([*BASE, *epoch(5000, 3, {"m1": (0,), "m2": (1,)}, 444, topology_epoch=1)])
    assert "metadata_change" not in causes_of(retopo[3])


def test_the_hash_survives_the_groups_snapshot():
    """A job restarted between the two bumps still tells the change (the hash is kept in the group's state)."""
    from rebalance_monitor.core.events import parse_event
    from rebalance_monitor.core.group import GroupMonitor
    from rebalance_monitor.core.settings import CoreSettings

    g = GroupMonitor(G, CoreSettings())
    for e in BASE:
        g.process(parse_event(e))
    again = GroupMonitor.from_state(g.to_state(), CoreSettings())
    out = []
    for e in epoch(5000, 3, {"m1": (0, 2), "m2": (1, 3)}, 222):
        out.extend(again.process(parse_event(e)))
    out.extend(again.advance_to(60_000))
    gens = [r for r in out if r["kind"] == "generation"]
    assert gens and causes_of(gens[0]) == ["metadata_change"], gens


def test_a_change_of_num_standby_replicas_in_the_groups_record_is_the_bumps_cause():
    """From `__consumer_offsets` alone: the group metadata record of the bump carries the configurations the
    coordinator's assignment now uses (decoded before the bump); a new num.standby.replicas is an operator's
    change (the log's `Assignment configurations changed` line says the same)."""
    gens = generations([ev("streams_topology", 900, G, num_standby_replicas=0), *BASE,
                        ev("streams_topology", 5000, G, num_standby_replicas=0),
                        *epoch(5000, 3, {"m1": (0,), "m2": (1,)}, 111),
                        ev("streams_topology", 8000, G, num_standby_replicas=1),
                        *epoch(8000, 4, {"m1": (0,), "m2": (1,)}, 111)])
    assert "assignment_config_change" not in causes_of(gens[3])
    assert causes_of(gens[4]) == ["assignment_config_change"], gens[4]["causes"]
    assert "num.standby.replicas 0 -> 1" in gens[4]["causes"][0]["reason"]
