"""Workload scenarios: real instrumented consumer groups that really cause rebalances.

Each scenario declares, as data (`Scenario.expect`), what the monitor should report for its group:

| key               | meaning                                                                        |
| ----------------- | ------------------------------------------------------------------------------ |
| `generations_min` | at least this many completed generations                                       |
| `generations_max` | at most this many: the scenario's worst case, derived next to it (`storm_threshold`) |
| `causes`          | every one of these causes appears among the generations' causes                |
| `causes_any`      | at least one of these causes appears                                           |
| `timeouts`        | `[{"timeout": "session" or "poll", "count": n}]`: member_timeout records (exactly n); `[]` = none |
| `storm`           | whether a storm (default settings: 4 generations inside 10 minutes) is reported |
| `members_final`   | members in the last generation                                                 |
| `members_final_as_clients` | the last generation and its member ids are those the clients themselves reported at the scenario's last `stable` action |
| `protocol_first`  | the assignor the group's first generation chose                                |
| `protocols`       | the assignors chosen over all generations (as a set)                           |
| `expected_assignment_matches` | the last generation's expected assignment is recomputed, and no generation's actual assignment differs from its expected one |
| `static_members`  | members with a group.instance.id                                               |
| `generation_kept_on_restart` | the clients' generation before and after a static member's restart is the same, and the monitor reports no newer generation |

`run_scenario(name, bootstrap, events_topic)` runs one and returns a `ScenarioResult`: the group and
topic it used, its time span, the `expect` data, and `actions` (what the scenario did and when:
ground truth for the end-to-end checks). `expect` describes the group up to `cleanup_ms`, when the
scenario starts tearing the group down (the remaining members then leave, which may add generations). Every thread and child process a scenario starts is stopped
before it returns, also on failure.
"""
from __future__ import annotations

import time
import uuid

from rebalance_monitor.instrument.emitter import Emitter, KafkaEmitter, now_ms

from .context import Ctx, Scenario, ScenarioResult
from .topics import ScenarioError, add_partitions, create_partitions_supported, ensure_topics

__all__ = ["SCENARIOS", "Ctx", "Scenario", "ScenarioError", "ScenarioResult", "ensure_topics", "run_scenario",
           "scenario_names", "storm_threshold", "add_partitions", "create_partitions_supported"]


# --- the scenarios ----------------------------------------------------------------------------------
# steady, scale-out and scale-in run confluent-kafka members (instrumented librdkafka, classic protocol), like the
# storm; kafka-python members run the crash, slow-consumer, rolling-restart, static, partition-change and
# mixed-assignor scenarios. (kafka-python 3.0's first leader used to rejoin right after its first assignment, and
# a join that finished between two polls was dropped: both are worked around in kafka_python_join.py.)
CONFLUENT = {"client": "confluent"}


def _steady(ctx: Ctx) -> None:
    ctx.start_traffic()
    members = [ctx.add_member(f"steady-{i}", **CONFLUENT) for i in range(3)]
    ctx.wait_stable(members)
    ctx.sleep(8)


def _scale_out(ctx: Ctx) -> None:
    ctx.start_traffic()
    members = [ctx.add_member("out-0", **CONFLUENT)]
    gen = ctx.wait_stable(members)
    for i in (1, 2):
        members.append(ctx.add_member(f"out-{i}", **CONFLUENT))
        gen = ctx.wait_stable(members, after_generation=gen)
    ctx.sleep(3)


def _scale_in(ctx: Ctx) -> None:
    ctx.start_traffic()
    members = [ctx.add_member(f"in-{i}", **CONFLUENT) for i in range(3)]
    gen = ctx.wait_stable(members)
    for _ in range(2):
        leaving = members.pop()
        ctx.stop_member(leaving)
        gen = ctx.wait_stable(members, after_generation=gen)
    ctx.sleep(3)


def _crash(ctx: Ctx) -> None:
    ctx.start_traffic()
    survivor = ctx.add_member("crash-survivor")
    # the survivor alone first: a "stable" truth names every member of its generation, so the victim joins only
    # after it (started together, both could land in the survivor's first stable generation, which the truth
    # would then name with the survivor alone)
    gen = ctx.wait_stable([survivor], partitions=0)
    victim, gen = ctx.join_process(survivor, "crash-victim", gen)
    ctx.sleep(2)
    ctx.action("kill_member", member=victim.name, member_id=victim.member_id, signal="SIGKILL")
    victim.kill()
    ctx.wait_stable([survivor], timeout=ctx.session_timeout_ms / 1000 + 40, after_generation=gen)
    ctx.sleep(2)


def _slow_consumer(ctx: Ctx) -> None:
    ctx.start_traffic()
    fast = ctx.add_member("slow-fast")
    slow = ctx.add_member("slow-slow", max_poll_interval_ms=5000, slow_sleep_s=12.0, slow_after_s=3.0)
    # quiet: kafka-python's first leader may rejoin right after its first assignment (its metadata snapshot
    # moved), a generation of its own
    gen = ctx.wait_quiet([fast, slow], quiet_s=1.5)
    # the slow handler stalls; after 5 s the consumer's heartbeat thread leaves the group (poll timeout)
    # and the fast member gets a generation of its own, with every partition
    alone = ctx.wait_stable([fast], timeout=40, after_generation=gen)
    ctx.action("poll_timeout_observed", member=slow.name, generation=alone)
    # the slow member comes back on its next poll and rejoins
    ctx.wait_stable([fast, slow], timeout=40, after_generation=alone)
    ctx.sleep(2)


def _rolling_restart(ctx: Ctx) -> None:
    ctx.start_traffic()
    members = [ctx.add_member(f"roll-{i}") for i in range(3)]
    gen = ctx.wait_stable(members)
    for i in range(3):
        old = members[i]
        ctx.stop_member(old)
        rest = [m for m in members if m is not old]
        gen = ctx.wait_stable(rest, after_generation=gen)
        members[i] = ctx.add_member(old.name)
        gen = ctx.wait_stable(members, after_generation=gen)
    ctx.sleep(2)


STATIC_SESSION_TIMEOUT_MS = 15_000


def _static_restart(ctx: Ctx) -> None:
    ctx.start_traffic()
    # a session timeout well above the restart's length: the restarted instance comes back inside it
    session = max(ctx.session_timeout_ms, STATIC_SESSION_TIMEOUT_MS)
    members = [ctx.add_member(f"static-{i}", group_instance_id=f"{ctx.group}-static-{i}",
                              session_timeout_ms=session) for i in range(2)]
    # (a member that sends a second JoinGroup before its first heartbeat, as kafka-python sometimes does right
    # after its first sync under load, is still expired there and rejoins: one more round, waited for here)
    gen = ctx.wait_quiet(members, quiet_s=3, timeout=90)
    # restart static-1 well inside its session timeout: a static member sends no LeaveGroup, and a
    # broker that honours static membership hands the same assignment back without a rebalance
    old = members[1]
    stopped = time.monotonic()
    ctx.stop_member(old)
    members[1] = ctx.add_member(old.name, group_instance_id=old.spec.group_instance_id, session_timeout_ms=session)
    # a broker that expired the old instance's session after all would do so a session timeout after its
    # last heartbeat (before the stop), and the members would notice at their next heartbeat: end in a group
    # that stayed stable past that point
    after = ctx.wait_quiet(members, quiet_s=3, timeout=session / 1000 + 60,
                           not_before=stopped + session / 1000 + 2)
    ctx.action("restart_done", generation_before=gen, generation_after=after)


def _storm(ctx: Ctx) -> None:
    ctx.start_traffic()
    # confluent-kafka members (see CONFLUENT): with kafka-python members the extra rejoins made the storm look
    # mixed in about one loaded run in three
    members = [ctx.add_member(f"storm-{i}", **CONFLUENT) for i in range(2)]
    gen = ctx.wait_stable(members)
    for cycle in range(4):
        flapper = ctx.add_member("storm-flapper", **CONFLUENT)
        gen = ctx.wait_stable(members + [flapper], after_generation=gen)
        ctx.stop_member(flapper)
        gen = ctx.wait_stable(members, after_generation=gen)
    ctx.sleep(2)


def _partition_change(ctx: Ctx) -> None:
    if create_partitions_supported(ctx.bootstrap, ctx.topic, ctx.partitions):
        ctx.start_traffic()
        members = [ctx.add_member(f"parts-{i}", metadata_max_age_ms=2000) for i in range(2)]
        gen = ctx.wait_stable(members)
        ctx.action("create_partitions", topic=ctx.topic, total=ctx.partitions + 2)
        add_partitions(ctx.bootstrap, ctx.topic, ctx.partitions + 2)
        ctx.wait_stable(members, timeout=40, after_generation=gen, partitions=ctx.partitions + 2)
    else:
        # the broker lacks CreatePartitions : change the group's partitions the other way,
        # with a pattern subscription that a newly created topic then matches. (Subscribing to a topic
        # that does not exist yet does not work there: some brokers create topics on a metadata request.)
        ctx.notes.append("broker does not implement CreatePartitions: a new topic matching the members' "
                         "pattern subscription changes the group's partitions instead")
        ctx.action("create_partitions_unsupported", topic=ctx.topic)
        ctx.start_traffic()
        pattern = "^" + ctx.topic.replace(".", r"\.") + r"(-extra)?$"
        # only parts-0 refreshes its metadata often: one member notices the new topic and re-joins (two
        # members noticing it at nearly the same moment can stall such a broker's rebalance)
        members = [ctx.add_member(f"parts-{i}", topics=[], pattern=pattern,
                                  metadata_max_age_ms=1000 if i == 0 else 300000) for i in range(2)]
        gen = ctx.wait_stable(members)
        extra = ctx.topic + "-extra"
        ctx.action("create_topic", topic=extra, partitions=2)
        ensure_topics(ctx.bootstrap, {extra: 2})
        ctx.wait_stable(members, timeout=60, after_generation=gen, partitions=ctx.partitions + 2)
    ctx.sleep(2)


def _mixed_assignors(ctx: Ctx) -> None:
    ctx.start_traffic()
    # Three members, three first choices, one protocol they all support. Apache Kafka picks the group's
    # protocol by vote at every generation: among the protocols every member supports, each member votes
    # for the one it lists first. Here roundrobin wins every vote (2 to 1 against range with all three; 2 to
    # 0 after the range-first member left; alone, if the first member forms a generation by itself).
    first = ctx.add_member("mixed-rr", assignors=["roundrobin", "range"])
    # its JoinGroup reached the coordinator once it has a member id
    ctx.wait_until(lambda: bool(first.snapshot().member_id), 30, "the first member's join to be answered")
    members = [first, ctx.add_member("mixed-range", assignors=["range", "roundrobin"]),
               ctx.add_member("mixed-sticky", assignors=["sticky", "roundrobin", "range"])]
    gen = ctx.wait_quiet(members, quiet_s=2)
    # the member that prefers range leaves; the other two both vote roundrobin
    ctx.stop_member(members[1])
    ctx.wait_quiet([members[0], members[2]], quiet_s=2, after_generation=gen)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("steady", "three members (confluent-kafka) join and consume steadily; no further rebalances", _steady,
             # three members started together form the group in 1 to 3 generations (each join that reaches the
             # broker after the previous round completed starts one more); nothing after that
             {"generations_min": 1, "generations_max": 3, "causes": ["member_joined"], "timeouts": [],
              "storm": False, "members_final": 3}, estimated_s=15),
    Scenario("scale_out", "one member (confluent-kafka), then a second and a third join, one at a time", _scale_out,
             # one generation per join, each waited for
             {"generations_min": 3, "generations_max": 3, "causes": ["member_joined"], "timeouts": [],
              "storm": False, "members_final": 3}, estimated_s=20),
    Scenario("scale_in", "three members (confluent-kafka), then two leave gracefully one at a time (LeaveGroup)",
             _scale_in,
             # 1 to 3 to form (three started together) + one per leave: 3 to 5, the most of the non-storm scenarios
             {"generations_min": 3, "generations_max": 5, "causes": ["member_joined", "member_left"], "timeouts": [],
              "storm": False, "members_final": 1}, estimated_s=20),
    Scenario("crash", "a member in a child process is SIGKILLed: no LeaveGroup, heartbeats stop, "
             "the coordinator removes it after the session timeout (6 s)", _crash,
             # 1 or 2 to form (two started together) + the expiry
             {"generations_min": 2, "generations_max": 3, "causes": ["session_timeout"],
              "timeouts": [{"timeout": "session", "count": 1}], "storm": False, "members_final": 1},
             estimated_s=30),
    Scenario("slow_consumer", "a member's handler sleeps 12 s with max.poll.interval.ms 5 s: its heartbeat "
             "thread leaves the group (poll timeout), and it rejoins on its next poll", _slow_consumer,
             # 1 or 2 to form + the poll-timeout leave + the rejoin
             {"generations_min": 3, "generations_max": 4, "causes": ["poll_timeout", "member_joined"],
              "timeouts": [{"timeout": "poll", "count": 1}], "storm": False, "members_final": 2},
             estimated_s=30),
    Scenario("rolling_restart", "three members are restarted one after the other (leave, then join)",
             _rolling_restart,
             # 1 to 3 to form + a leave and a join per restart: 7 to 9
             {"generations_min": 7, "generations_max": 9, "causes": ["member_joined", "member_left"], "timeouts": [],
              "storm": True, "storm_pattern": "rolling_restart", "members_final": 3}, estimated_s=45),
    Scenario("static_restart", "two static members (group.instance.id, session timeout 15 s); one restarts "
             "within its session timeout: no member times out, no rebalance, the group keeps its generation",
             _static_restart,
             # 1 or 2 to form; the restart adds none
             {"generations_min": 1, "generations_max": 2, "timeouts": [], "storm": False, "members_final": 2,
              "generation_kept_on_restart": True, "static_members": 2},
             estimated_s=35,
             notes=("kafka-python 3.0.12 supports static membership (group_instance_id; no LeaveGroup on "
                    "close). Apache Kafka (2.3+) hands a static member that rejoins within its session timeout "
                    "its old assignment under a new member id, without a rebalance: the clients stay on the "
                    "same generation, and the monitor's last generation record (emitted before the restart) "
                    "keeps the old member id.",)),
    Scenario("storm", "two stable members and a third that joins and leaves four times (confluent-kafka)", _storm,
             # 1 or 2 to form + a join and a leave per cycle: 9 or 10
             {"generations_min": 9, "generations_max": 10, "causes": ["member_joined", "member_left"], "timeouts": [],
              "storm": True, "storm_pattern": "flapping_member", "members_final": 2}, estimated_s=45),
    Scenario("partition_change", "the subscribed partitions change under a stable group (CreatePartitions, "
             "or on a broker without it a new topic matching the members' pattern)", _partition_change,
             # 1 or 2 to form + the leader's rejoin
             {"generations_min": 2, "generations_max": 3, "causes_any": ["metadata_change", "subscription_change"],
              "timeouts": [], "storm": False, "members_final": 2}, partitions=4, estimated_s=25,
             notes=("CreatePartitions on Apache Kafka: the leader notices the new partitions at its next "
                    "metadata refresh and rejoins. Only the instrumented client knows why (kafka-python sends no "
                    "JoinGroup reason; the broker logs `Leader ... re-joining group during Stable`).",)),
    Scenario("mixed_assignors", "members whose assignor lists differ (first choices roundrobin / range / "
             "sticky) share roundrobin: the group runs roundrobin, and the monitor recomputes its assignment "
             "with it; the range-first member then leaves", _mixed_assignors,
             # 1 for the first member (its join answered first) + 1 or 2 for the other two + the leave: 3 or 4
             {"generations_min": 2, "generations_max": 4, "causes": ["member_joined", "member_left"], "timeouts": [],
              "storm": False, "members_final": 2, "members_final_as_clients": True,
              "protocol_first": "roundrobin", "protocols": ["roundrobin"], "expected_assignment_matches": True},
             estimated_s=20,
             notes=("Apache Kafka selects the protocol at every generation by vote among the protocols all "
                    "members support.",)),
]}


def scenario_names() -> list[str]:
    return list(SCENARIOS)


def storm_threshold(names) -> int:
    """The `storm.min_rebalances` that tells the scenarios `names` apart: one more than the most generations a
    scenario without a storm can produce (its `generations_max`, the worst case derived next to it), and no more
    than the fewest a storm scenario produces (its `generations_min`). Every scenario's whole run fits inside the
    default 10-minute storm window, so all its generations count."""
    calm = [SCENARIOS[n] for n in names if not SCENARIOS[n].expect.get("storm")]
    stormy = [SCENARIOS[n] for n in names if SCENARIOS[n].expect.get("storm")]
    missing = [s.name for s in calm if "generations_max" not in s.expect]
    if missing:
        raise ValueError(f"scenarios without a worst case (generations_max): {missing}")
    threshold = max(s.expect["generations_max"] for s in calm) + 1
    low = [s.name for s in stormy if s.expect["generations_min"] < threshold]
    if low:
        raise ValueError(f"storm scenarios {low} may stay below the threshold {threshold}")
    return threshold


def run_scenario(name: str, bootstrap: str, events_topic: str, *, group: str | None = None,
                 topic: str | None = None, partitions: int | None = None, emitter: Emitter | None = None,
                 session_timeout_ms: int = 6000, rate: float = 20.0) -> ScenarioResult:
    """Run scenario `name` against the broker at `bootstrap`, emitting its events to `events_topic`.

    `group` / `topic` default to fresh unique names; the topic (and the events topic) are created if
    missing. `emitter` defaults to a `KafkaEmitter` to `events_topic` that is closed at the end (child
    processes always use their own). Raises `ScenarioError` if the group does not reach an expected
    state in time; cleans up in every case."""
    if name not in SCENARIOS:
        raise KeyError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    sc = SCENARIOS[name]
    suffix = uuid.uuid4().hex[:6]
    group = group or f"rm-{name}-{suffix}"
    topic = topic or f"rm-{name}-{suffix}"
    parts = partitions or sc.partitions
    ensure_topics(bootstrap, {topic: parts, events_topic: 1})
    own_emitter = emitter is None
    if emitter is None:
        emitter = KafkaEmitter(bootstrap, events_topic, client_id=f"rm-events-{name}")
    ctx = Ctx(name=name, bootstrap=bootstrap, events_topic=events_topic, group=group, topic=topic,
              partitions=parts, emitter=emitter, session_timeout_ms=session_timeout_ms, rate=rate)
    ctx.notes.extend(sc.notes)
    started = now_ms()
    cleanup_ms = None
    try:
        sc.run(ctx)
    finally:
        cleanup_ms = now_ms()
        ctx.cleanup()
        stats = None
        if own_emitter:
            emitter.close(timeout=10)
        else:
            emitter.flush(timeout=10)
        stats = emitter.stats()
    return ScenarioResult(name=name, group=group, topic=topic, events_topic=events_topic, started_ms=started,
                          ended_ms=now_ms(), expect=dict(sc.expect), actions=ctx.actions, notes=ctx.notes,
                          emitter_stats=stats, records_produced=getattr(ctx, "records_produced", 0),
                          cleanup_ms=cleanup_ms)
