"""The broker poller: asks the brokers what they know of groups and publishes it where the job reads it.

At start, then every `broker_facts.refresh`: the brokers' group settings (one event per group family, group "",
published again only when they change, and once a day so that a group first seen much later still finds them in
its shard's cluster log), the groups the cluster has (ListGroups) and, for each group not yet asked about and each
group the job reports having seen (`note_groups`), its own overrides (one event per group, again only when they
change). The events go to `broker_facts.topic` (one of the job's events topics), keyed by group so that a group's
events keep their order: the job applies them like any event (core/group/group_config.py), and `replay` of that
topic applies the same.

The events are stamped at the job's event time, not the wall clock: the newest time of the records the job has
written (`note_batch`). A setting is a standing fact, and stamped so it never runs ahead of the input: a job
catching up on old events, or reading events whose clocks trail the monitor's, does not find its groups' clocks
moved past the events still to come (which would then be late). Until the job has read an event the poller
waits: at least `WALL_CLOCK_AFTER_S`, and then until the job says its input is idle (it read everything there
was and found nothing), after which an idle input's groups get the wall clock. A restarted job slow to read its
first batch of a backlog is not idle: stamping its facts at the wall clock would move its groups' clocks past
the whole backlog, and time out every member in it.

A refusal (ACLs: DESCRIBE_CONFIGS) is counted (`rebalance_monitor_broker_facts_errors_total`), logged once with
what to grant, and the monitor goes on with the configuration's fallback (`core.kip848_session_timeout(s)`),
which every record that uses it names (`timeout_source: config`). Other failures are counted and logged once per
kind until the next success. Nothing here decides anything about a group: it reads and forwards.
"""
from __future__ import annotations

import json
import logging
import threading
import time

from .group_configs import Denied, ask_broker_configs, ask_group_configs, broker_events, group_events

log = logging.getLogger("rebalance_monitor.broker_facts")

WALL_CLOCK_AFTER_S = 60.0  # no record from the job by then: stamp with the wall clock (the input is idle)
REPUBLISH_S = 86_400  # the brokers' settings once a day even unchanged (a shard's cluster log keeps a week)
GROUPS_PER_REQUEST = 200
GONE = ("GROUP_ID_NOT_FOUND",)  # a description error that is no failure: the broker has no such group (any more)


class BrokerFactsPoller:
    """`admin`: kafka-python's KafkaAdminClient; `publish(key, value)`: writes one event (bytes) to the events
    topic; `note(reason)`: counts a failure (the exporter's `note_broker_facts_error`, or nothing); `clock`:
    epoch seconds (the wall clock: republishing, and the stamp of an idle input); `event_time`: stamp with the
    job's event time (`note_batch`; False: the wall clock from the start, e.g. a poller without a job);
    `input_idle()`: True when the job has read all its input there was and found none (None: never said, so
    no wall clock while `event_time`)."""

    def __init__(self, admin, publish, flush=None, refresh_s: float = 300.0, note=None, clock=time.time,
                 event_time: bool = True, connect=None, input_idle=None):
        self.input_idle = input_idle
        # `connect()` -> (admin, publish, flush, close): clients for one round of the thread, closed after it, so
        # that none keeps reconnecting (and logging) while the brokers are away; None: `admin` and `publish` stay
        self.connect = connect
        self.admin = admin
        self.publish = publish
        self.flush = flush
        self.refresh_s = refresh_s
        self.note = note or (lambda reason: None)
        self.clock = clock
        self._said: dict[str, str] = {}  # key ("" or a group) -> the JSON of the events last published
        self._broker_said_at = 0.0
        self._wanted: set[str] = set()  # groups the job saw, not yet asked about
        self._known: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._logged: set[str] = set()
        self.denied = False
        self.polls = 0
        self.event_time = event_time
        self._frontier: int | None = None  # the newest record time the job wrote
        self._changed: set[str] = set()  # groups with a new generation since they were last described
        self._started = clock()

    # --- the job's side -------------------------------------------------------------------------------
    def note_batch(self, records, event_time_ms: int | None = None) -> None:
        """A batch's output records: their groups (asked about at once when new) and newest time (the stamp);
        `event_time_ms`: the highest event time the job has read (a batch may read events and write no record)."""
        newest = max([r.get("ts") or 0 for r in records] + [event_time_ms or 0])
        if newest > (self._frontier or 0):
            self._frontier = int(newest)
        changed = {r.get("group") for r in records if r.get("kind") == "generation" and r.get("group")}
        if changed:
            with self._lock:
                self._changed |= changed
            self._wake.set()
        self.note_groups({r.get("group") for r in records})

    def stamp_ms(self) -> int | None:
        """The time to stamp events with: the job's event time; the wall clock without `event_time`, or once
        `WALL_CLOCK_AFTER_S` have passed and the job says its input is idle; None while waiting."""
        if self._frontier is not None:
            return self._frontier
        now = self.clock()
        if not self.event_time:
            return int(now * 1000)
        if now - self._started >= WALL_CLOCK_AFTER_S and self.input_idle is not None and self.input_idle():
            return int(now * 1000)
        return None

    def note_groups(self, groups) -> None:
        """Groups the job has seen: those not asked about yet are asked about at once."""
        with self._lock:
            new = {g for g in groups if g and g not in self._known}
            if not new:
                return
            self._wanted |= new
            self._known |= new
        self._wake.set()

    # --- one round --------------------------------------------------------------------------------------
    def poll_once(self, everything: bool = True) -> int:
        """Ask and publish; `everything`: the brokers' settings and every group (a refresh), else only the groups
        noted since. Returns how many events were published."""
        published = 0
        now = self.clock()
        at = self.stamp_ms()
        if at is None:
            return 0
        if everything:
            published += self._brokers(now, at)
            groups = self._list_groups()
            with self._lock:
                self._known |= set(groups)
                wanted = sorted(set(groups) | self._wanted)
                self._wanted.clear()
        else:
            with self._lock:
                wanted = sorted(self._wanted)
                self._wanted.clear()
        for i in range(0, len(wanted), GROUPS_PER_REQUEST):
            published += self._groups(wanted[i:i + GROUPS_PER_REQUEST], at)
        with self._lock:
            changed = sorted(self._changed)[:GROUPS_PER_REQUEST]
            self._changed.difference_update(changed)
        if changed:
            published += self._describe(changed, at)
        if published and self.flush is not None:
            self.flush()
        self.polls += 1
        return published

    def _brokers(self, now: float, at: int) -> int:
        try:
            entries = ask_broker_configs(self.admin)
        except Denied as exc:
            self._refused(exc)
            return 0
        except Exception as exc:  # noqa: BLE001 - counted, logged once, tried again at the next refresh
            self._failed("describe_configs_failed", f"DescribeConfigs of the brokers failed: {exc}")
            return 0
        self.denied = False
        events = broker_events(entries, at) + self._release(at)
        again = now - self._broker_said_at >= REPUBLISH_S
        n = self._say("", events, force=again)
        if n:
            self._broker_said_at = now
        return n

    def _release(self, ts: int) -> list[dict]:
        """The brokers' release as their ApiVersions answer tells it (broker_facts/release.py), when it names one:
        a `broker_release` event marked `source: api_versions` (a log line's release wins over it in the core)."""
        from .release import ask_release

        try:
            guess = ask_release(self.admin)
        except Exception as exc:  # noqa: BLE001 - the server assignors then follow the newest rules, as before
            self._failed("api_versions_failed", f"ApiVersions of the brokers failed: {exc}")
            return []
        if guess.release is None:
            if "release" not in self._logged:
                self._logged.add("release")
                log.debug("the brokers' release is not told by ApiVersions: %s", guess.basis)
            return []
        return [{"v": 1, "type": "broker_release", "ts": ts, "group": "", "release": guess.release,
                 "source": "api_versions"}]

    def _groups(self, groups: list[str], at: int) -> int:
        try:
            answers = ask_group_configs(self.admin, groups)
        except Denied as exc:
            self._refused(exc)
            return 0
        except Exception as exc:  # noqa: BLE001 - e.g. a 3.x broker (no GROUP configs): counted, logged once
            self._failed("describe_configs_failed", f"DescribeConfigs of {len(groups)} groups failed: {exc}")
            return 0
        n = 0
        for group in groups:
            entries = answers.get(group)
            if entries is not None:
                n += self._say(group, group_events(group, entries, at))
        return n

    def _describe(self, groups: list[str], at: int) -> int:
        """The coordinators' descriptions of groups that have a new generation (the describe APIs), published as
        `group_described` events: the core holds them against its reconstruction (core/group/broker_view.py)."""
        from .describe import describe_groups

        try:
            descriptions = describe_groups(self.admin, groups)
        except Exception as exc:  # noqa: BLE001 - counted, logged once; the next generation asks again
            self._failed("describe_groups_failed", f"describing {len(groups)} groups failed: {exc}")
            return 0
        n = 0
        for desc in descriptions.values():
            if desc.error in GONE:
                continue  # the group is gone already (or is the events' alone): nothing to hold against
            if desc.error is not None:
                self.note(f"describe_{desc.error.lower()}"[:60])
                continue
            try:
                self.publish(desc.group.encode(), json.dumps(described_event(desc, at), separators=(",", ":")).encode())
            except Exception as exc:  # noqa: BLE001
                self._failed("publish_failed", f"publishing what the brokers said failed: {exc}")
                return n
            n += 1
        return n

    def _list_groups(self) -> list[str]:
        try:
            listed = self.admin.list_groups()
        except Exception as exc:  # noqa: BLE001
            self._failed("list_groups_failed", f"ListGroups failed: {exc}")
            return []
        names = []
        for item in listed or ():
            name = item.get("group_id") if isinstance(item, dict) else (item[0] if isinstance(item, tuple) else
                                                                         getattr(item, "group_id", None))
            if name:
                names.append(name)
        return names

    def _say(self, key: str, events: list[dict], force: bool = False) -> int:
        """Publish `events` unless the same were published last for `key`."""
        text = json.dumps([{k: v for k, v in e.items() if k != "ts"} for e in events], sort_keys=True)
        if not events or (not force and self._said.get(key) == text):
            return 0
        try:
            for ev in events:
                self.publish(key.encode(), json.dumps(ev, separators=(",", ":")).encode())
        except Exception as exc:  # noqa: BLE001
            self._failed("publish_failed", f"publishing what the brokers said failed: {exc}")
            return 0
        self._said[key] = text
        return len(events)

    def _refused(self, exc: Denied) -> None:
        self.note("describe_configs_denied")
        self.denied = True
        if "denied" not in self._logged:
            self._logged.add("denied")
            log.warning("the brokers refused to describe their group settings; using the configuration's fallback "
                        "(core.kip848_session_timeout), which each record names (timeout_source: config): %s", exc)

    def _failed(self, reason: str, text: str) -> None:
        self.note(reason)
        if reason not in self._logged:
            self._logged.add(reason)
            log.warning("%s", text)

    # --- the thread ----------------------------------------------------------------------------------------
    def _run(self) -> None:
        last = 0.0
        while not self._stop.is_set():
            if self.stamp_ms() is None:  # the job has written nothing yet: its event time is not known
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            everything = time.monotonic() - last >= self.refresh_s
            try:
                self._round(everything)
            except Exception as exc:  # noqa: BLE001 - never end the thread
                self._failed("describe_configs_failed", f"asking the brokers failed: {exc}")
            if everything:
                last = time.monotonic()
                self._logged.discard("describe_configs_failed")
            self._wake.wait(max(0.0, min(self.refresh_s, last + self.refresh_s - time.monotonic())))
            self._wake.clear()

    def _round(self, everything: bool) -> int:
        """One `poll_once`, on clients of its own when the poller has a `connect`."""
        if self.connect is None:
            return self.poll_once(everything)
        try:
            self.admin, self.publish, self.flush, close = self.connect()
        except Exception as exc:  # noqa: BLE001 - the brokers away: counted, logged once, tried at the next round
            self._failed("connect_failed", f"the broker poller could not connect: {exc}")
            return 0
        try:
            return self.poll_once(everything)
        finally:
            self.admin = self.publish = self.flush = None
            close()

    def start(self) -> "BrokerFactsPoller":
        self._thread = threading.Thread(target=self._run, name="broker-facts", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def close(self) -> None:
        """Stop (a round's clients close with it)."""
        self.stop()


def start_poller(cfg, updater=None, input_idle=None) -> BrokerFactsPoller | None:
    """The poller of a monitor's configuration (broker_facts.*, the one Kafka connection), started; None when
    `broker_facts.enabled` is off or the configuration gives it no topic the job reads. `input_idle`: the job's
    (`StreamingQueryJob.input_idle`)."""
    topic = cfg.broker_facts_topic()
    if not cfg.broker_facts.enabled or topic is None:
        return None
    conf = cfg.kafka.connection().kafka_python()
    conf.pop("client_id", None)

    def connect():
        from kafka import KafkaAdminClient, KafkaProducer

        admin = KafkaAdminClient(client_id="rebalance-monitor-broker-facts", **conf)
        producer = None

        def publish(key: bytes, value: bytes) -> None:
            nonlocal producer
            if producer is None:  # (only a round with something to say opens one)
                producer = KafkaProducer(client_id="rebalance-monitor-broker-facts", acks="all", linger_ms=50, **conf)
            producer.send(topic, key=key, value=value)

        def flush() -> None:
            if producer is not None:
                producer.flush(30)

        def close() -> None:
            if producer is not None:
                producer.close(timeout=10)
            admin.close()

        return admin, publish, flush, close

    poller = BrokerFactsPoller(None, None, refresh_s=int(cfg.broker_facts.refresh) / 1000.0,
                               note=updater.note_broker_facts_error if updater is not None else None, connect=connect,
                               input_idle=input_idle)
    return poller.start()


STREAMS_MEMBER_FIELDS = ("active_tasks", "standby_tasks", "warmup_tasks", "target_active_tasks",
                         "target_standby_tasks", "target_warmup_tasks")


def described_event(desc, ts: int) -> dict:
    """The `group_described` event of a coordinator's description (broker_facts/descriptions.py). A streams group's
    (StreamsGroupDescribe) adds its topology epoch, and each member's process id and tasks ([subtopology id,
    partition] pairs); the other groups' events carry none of these fields."""
    def parts(tps):
        return None if tps is None else [[t, p] for t, p in tps]

    def member(m) -> dict:
        out = {"member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
               "client_host": m.client_host, "member_epoch": m.member_epoch, "assignment": parts(m.assignment),
               "target_assignment": parts(m.target_assignment)}
        if m.process_id is not None or m.active_tasks is not None:
            out["process_id"] = m.process_id
            out.update((f, parts(getattr(m, f))) for f in STREAMS_MEMBER_FIELDS)
        return out

    ev = {"v": 1, "type": "group_described", "ts": ts, "group": desc.group, "group_type": desc.group_type,
          "state": desc.state, "protocol": desc.protocol or None, "group_epoch": desc.group_epoch,
          "assignment_epoch": desc.assignment_epoch, "members": [member(m) for m in desc.members]}
    if desc.topology_epoch is not None:
        ev["topology_epoch"] = desc.topology_epoch
    return ev
