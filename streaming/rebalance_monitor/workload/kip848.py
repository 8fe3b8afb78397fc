"""Scenarios with other clients than kafka-python: KIP-848 groups (`group.protocol=consumer`, confluent-kafka,
the broker assigns) and a group of plain Java consumers (kafka-clients, classic protocol, uninstrumented: the
monitor sees them only through the broker). Registered into `scenarios.SCENARIOS`.

KIP-848 vocabulary: a member's `generation` is its member epoch; the group's generations are group epochs
(the broker bumps it at every membership or subscription change and computes a new target assignment); a
member is stable once its epoch reached the group's and it owns its target partitions.

`Scenario.expect` may name `witnesses`: the inputs that can see the group (default: all three); the first is
the one the scenario's expectations are judged on.
"""
from __future__ import annotations

from ..testing.broker import TEST_BROKER_SETTINGS
from .scenarios import SCENARIOS, Ctx, Scenario

# a KIP-848 member's session is the broker's: the test broker's, for the instrumentation's liveness heartbeats
KIP848_SESSION_TIMEOUT_MS = int(TEST_BROKER_SETTINGS["group.consumer.session.timeout.ms"])
K848 = {"client": "confluent", "group_protocol": "consumer", "session_timeout_ms": KIP848_SESSION_TIMEOUT_MS}
JAVA = {"client": "java"}
JAVA_K848 = {"client": "java", "group_protocol": "consumer"}
ALL = ("events", "coordinator-log", "offsets-topic")
BROKER_ONLY = ("coordinator-log", "offsets-topic")


def _kip848_scale(ctx: Ctx) -> None:
    ctx.start_traffic()
    members, gen = [], None
    for i in range(3):
        members.append(ctx.add_member(f"k848-{i}", **K848))
        gen = ctx.wait_stable(members, after_generation=gen, timeout=60)
    leaving = members.pop()
    ctx.stop_member(leaving)
    ctx.wait_stable(members, after_generation=gen, timeout=60)
    ctx.sleep(2)


def _kip848_crash(ctx: Ctx) -> None:
    ctx.start_traffic()
    survivor = ctx.add_member("k848-survivor", **K848)
    gen = ctx.wait_stable([survivor], timeout=60)
    victim, gen = ctx.join_process(survivor, "k848-victim", gen, **K848)
    ctx.sleep(2)
    ctx.action("kill_member", member=victim.name, member_id=victim.member_id, signal="SIGKILL")
    victim.kill()
    # the broker fences it after group.consumer.session.timeout.ms (10 s on the test broker)
    ctx.wait_stable([survivor], timeout=60, after_generation=gen)
    ctx.sleep(2)


def _kip848_slow(ctx: Ctx) -> None:
    ctx.start_traffic()
    fast = ctx.add_member("k848-fast", **JAVA_K848)
    slow = ctx.add_member("k848-slow", **JAVA_K848, max_poll_interval_ms=5000, slow_sleep_s=12.0, slow_after_s=3.0)
    # quiet: a member that joins sits at the old group epoch with no partitions until the broker computed the
    # new target (up to a second later), a state both clients briefly call stable
    gen = ctx.wait_quiet([fast, slow], quiet_s=2.5, timeout=90)
    # the slow member stops polling for 12 s; 5 s in, its client leaves the group (the Java client's
    # poll timer under KIP-848) and the broker gives the fast member every partition
    alone = ctx.wait_stable([fast], timeout=60, after_generation=gen)
    ctx.action("poll_timeout_observed", member=slow.name, generation=alone)
    # back from the stall, it polls again and rejoins with the same member id
    ctx.wait_stable([fast, slow], timeout=60, after_generation=alone)
    ctx.sleep(2)


def _java_classic(ctx: Ctx) -> None:
    ctx.start_traffic()
    members = [ctx.add_member(f"java-{i}", **JAVA) for i in range(2)]
    gen = ctx.wait_stable(members, timeout=90)
    members.append(ctx.add_member("java-2", **JAVA))
    gen = ctx.wait_stable(members, timeout=90, after_generation=gen)
    ctx.stop_member(members.pop(0))
    ctx.wait_stable(members, timeout=90, after_generation=gen)
    ctx.sleep(2)


for _sc in [
    Scenario("kip848_scale", "KIP-848 (confluent-kafka, group.protocol=consumer): three members join one at a "
             "time, then one leaves; the broker computes every assignment", _kip848_scale,
             # KIP-848: one group epoch per join (each waited for) and one for the leave
             {"generations_min": 4, "generations_max": 4, "causes": ["member_joined", "member_left"], "timeouts": [],
              "storm": False,
              "members_final": 2, "witnesses": ALL, "group_protocol": "consumer"}, estimated_s=30),
    Scenario("kip848_crash", "KIP-848: a member in a child process is SIGKILLed; the broker fences it when its "
             "session (10 s on the test broker) expires", _kip848_crash,
             # one epoch per join (the second waited for) + the fencing
             {"generations_min": 3, "generations_max": 3, "causes": ["session_timeout"], "storm": False,
              "members_final": 1,
              # judged on the client events: librdkafka surfaces no heartbeats, but the instrumentation's own
              # liveness heartbeats stop with the killed process (instrument/confluent.py)
              "timeouts": [{"timeout": "session", "count": 1}], "witnesses": ALL, "group_protocol": "consumer"},
             estimated_s=35),
    Scenario("kip848_slow", "KIP-848 slow member: a plain Java consumer (group.protocol=consumer) stalls past "
             "max.poll.interval.ms; its client leaves the group, then rejoins with the same member id", _kip848_slow,
             # one epoch per join (two) + the poll-timeout leave + the rejoin
             {"generations_min": 3, "generations_max": 4, "causes": ["member_left", "member_joined"], "storm": False,
              "members_final": 2,
              # seen only through the broker (Java is not instrumented); a KIP-848 heartbeat carries no reason,
              # so the broker logs the poll-timeout leave as a plain leave: cause member_left (a named blind spot)
              "witnesses": BROKER_ONLY, "group_protocol": "consumer"}, estimated_s=40),
    Scenario("java_classic", "plain Java consumers (kafka-clients, classic protocol, range), seen only through "
             "the broker: two join, a third joins, the first leaves", _java_classic,
             # 1 or 2 to form (two started together) + the third's join + the leave
             {"generations_min": 3, "generations_max": 4, "causes": ["member_joined", "member_left"], "storm": False,
              "members_final": 2, "witnesses": BROKER_ONLY}, estimated_s=35),
]:
    SCENARIOS[_sc.name] = _sc
