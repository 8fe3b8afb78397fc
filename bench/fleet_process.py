"""The fleet bench's outside world, in a process of its own (bench_fleet.py starts it with multiprocessing's spawn):
the fleet's clients sending their events to the broker (fleet_schedule.py) and Prometheus scraping the job's
/metrics. Apart from the job's driver, so that neither takes the driver's Python interpreter lock nor counts in its
CPU; the job's processes are the driver JVM and Python workers (proc_tree.KINDS), and this process is none of them.
"""
from __future__ import annotations

import re
import threading
import time
import urllib.request

from rebalance_monitor.metrics.catalogue import (HEARTBEAT_GAP_RATIO, MEMBER_AT_RISK_DEADLINE, MEMBER_TIMEOUTS,
                                                 POLL_GAP_RATIO)

GAP_FAMILIES = {"session": HEARTBEAT_GAP_RATIO.name, "poll": POLL_GAP_RATIO.name}
TIMEOUTS = MEMBER_TIMEOUTS.name
AT_RISK = MEMBER_AT_RISK_DEADLINE.name


def family(text: str, name: str) -> str:
    """The lines of one metric family in a Prometheus text exposition ("" if absent)."""
    start = text.find(f"# TYPE {name} ")
    if start < 0:
        return ""
    end = text.find("\n# HELP", start)
    return text[start:] if end < 0 else text[start:end]


class Scraper(threading.Thread):
    """Scrapes /metrics every `every_s`; for each watched member (its group and kind: "session" or "poll") notes
    when its own at-risk series first showed (and the deadline it gave) and when it went, when its group's gap ratio
    of that kind first reached `warn`, and when the group's timeouts counter first showed a timeout of that kind."""

    def __init__(self, url: str, watched: dict[str, tuple[str, str]], warn: float, every_s: float):
        super().__init__(name="scraper", daemon=True)
        # watched: member id -> (group, kind)
        self.url, self.watched, self.warn, self.every_s = url, watched, warn, every_s
        self.at_risk: dict[str, tuple[float, float]] = {}   # member -> (when its series first showed, its deadline)
        self.cleared: dict[str, float] = {}                 # member -> when its series went, after it showed
        self.warned: dict[str, float] = {}                  # group -> when its gap ratio reached `warn`
        self.timed_out: dict[str, float] = {}
        self.scrape_s: list[float] = []
        self.bytes = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            t0 = time.time()
            try:
                with urllib.request.urlopen(self.url, timeout=10) as r:
                    text = r.read().decode()
            except OSError:
                text = ""
            seen = time.time()
            self.scrape_s.append(seen - t0)
            self.bytes = max(self.bytes, len(text))
            self.note(text, seen)
            self.halt.wait(max(0.0, self.every_s - (time.time() - t0)))

    def note(self, text: str, seen: float) -> None:
        """What one scrape's exposition `text`, read at `seen`, shows of the watched members and their groups."""
        timeouts = family(text, TIMEOUTS)
        gaps = {kind: family(text, name) for kind, name in GAP_FAMILIES.items()}
        at_risk = family(text, AT_RISK)
        for member, (group, kind) in self.watched.items():
            g = re.escape(group)
            if member not in self.cleared and text:
                m = re.search(rf'^{AT_RISK}{{[^}}]*\bgroup="{g}",[^}}]*risk="{kind}",member_id="{re.escape(member)}",'
                              rf'[^}}]*}} (\S+)$', at_risk, re.M)
                if m and member not in self.at_risk:
                    self.at_risk[member] = (seen, float(m.group(1)))
                elif not m and member in self.at_risk:
                    self.cleared[member] = seen
            if group not in self.warned:
                m = re.search(rf'^{GAP_FAMILIES[kind]}{{[^}}]*\bgroup="{g}"(?:,[^}}]*)?}} (\S+)$', gaps[kind], re.M)
                if m and float(m.group(1)) >= self.warn:
                    self.warned[group] = seen
            if group not in self.timed_out:
                m = re.search(rf'^{TIMEOUTS}{{[^}}]*\bgroup="{g}"[^}}]*timeout="{kind}"[^}}]*}} (\S+)$', timeouts,
                              re.M)
                if m and float(m.group(1)) > 0:
                    self.timed_out[group] = seen



def produce_due(p, topic: str, events, dumps) -> int:
    """Send `events` (the fleet's due ones) to `topic` with the producer `p`, each keyed by its group, waiting
    while the producer's queue is full; how many were sent."""
    sent = 0
    for e in events:
        while True:
            try:
                p.produce(topic, dumps(e), key=e["group"].encode())
                break
            except BufferError:
                p.poll(0.05)
        sent += 1
    return sent

class OffsetCommits:
    """The members' commits as the brokers have them: each group's commits of the last `every_s` committed with
    one OffsetCommit (the admin API's alter offsets: the simulated groups have no live members at the broker), so
    the group coordinator appends one `__consumer_offsets` record per partition committed, as real consumers'
    commits do. Failures are counted, not raised (the report says them)."""

    def __init__(self, bootstrap: str, every_s: float = 1.0):
        from confluent_kafka.admin import AdminClient

        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
        self.every_s = every_s
        self.pending: dict[str, dict] = {}  # group -> {(topic, partition): offset}
        self.last = time.time()
        self.futures: list = []
        self.commits = self.requests = self.records = self.failed = 0

    def add(self, e: dict) -> None:
        offsets = self.pending.setdefault(e["group"], {})
        for t, partition, offset in e["offsets"]:
            offsets[(t, partition)] = offset
        self.commits += 1

    def flush_due(self, force: bool = False) -> None:
        if not force and time.time() - self.last < self.every_s:
            return
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        self.last = time.time()
        for group, offsets in self.pending.items():
            parts = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
            self.futures.extend(self.admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, parts)], request_timeout=30).values())
            self.requests += 1
            self.records += len(parts)  # the coordinator's __consumer_offsets records: one per partition
        self.pending.clear()
        self._reap()

    def _reap(self, wait: bool = False) -> None:
        left = []
        for f in self.futures:
            if wait or f.done():
                try:
                    f.result(timeout=30)
                except Exception:  # noqa: BLE001 - counted, said in the report
                    self.failed += 1
            else:
                left.append(f)
        self.futures = left

    def close(self) -> dict:
        self.flush_due(force=True)
        self._reap(wait=True)
        return {"commits": self.commits, "commit_requests": self.requests, "commit_records": self.records,
                "commit_failures": self.failed}


def send(bootstrap: str, topic: str, fleet, seconds: float, offsets: bool = False) -> dict:
    """The fleet's due events every 100 ms for `seconds`, keyed by group (the instrumentation's emitter's key).
    `offsets`: the commits go to the brokers as offset commits (`__consumer_offsets`), not to `topic`."""
    import orjson
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "log_level": 3,
                  "queue.buffering.max.messages": 1_000_000})
    commits = OffsetCommits(bootstrap) if offsets else None
    sent, behind, dumps = 0, 0.0, orjson.dumps
    end = fleet.start_ms / 1000.0 + seconds
    while time.time() < end:
        now = int(time.time() * 1000)
        due = fleet.due(now)
        if commits is not None:
            for e in due:
                if e["type"] == "commit":
                    commits.add(e)
            due = [e for e in due if e["type"] != "commit"]
            commits.flush_due()
        sent += produce_due(p, topic, due, dumps)
        p.poll(0)
        behind = max(behind, time.time() - now / 1000.0)
        time.sleep(max(0.0, 0.1 - (time.time() - now / 1000.0)))
    p.flush(30)
    out = {"sent": sent, "behind_s": behind}
    if commits is not None:
        out.update(commits.close())
    return out


def main(conn, bootstrap: str, topic: str, url: str, fleet_args: dict, seconds: float, warn: float,
         every_s: float, offsets: bool = False) -> None:
    """The child's work: sends ("started", start_ms), runs the fleet for `seconds`, sends ("sent", figures), scrapes
    on until `conn` says "stop", then sends ("done", everything the report needs)."""
    from fleet_schedule import Fleet

    fleet = Fleet(start_ms=int(time.time() * 1000), **fleet_args)
    scraper = Scraper(url, {w.member_id: (w.group, w.kind) for w in fleet.watched.values()}, warn, every_s)
    scraper.start()
    conn.send(("started", fleet.start_ms))
    try:
        figures = send(bootstrap, topic, fleet, seconds, offsets)
        figures["cpu_s"] = time.process_time()
        error = None
    except Exception as exc:  # noqa: BLE001 - said in the report: the fleet stopped sending
        figures, error = {"sent": 0, "behind_s": float("nan"), "cpu_s": time.process_time()}, repr(exc)
    conn.send(("sent", figures))
    conn.recv()
    scraper.halt.set()
    scraper.join()
    conn.send(("done", {
        **figures, "error": error, "members": fleet.members, "churned": fleet.churned, "start_ms": fleet.start_ms,
        "generations": dict(fleet.generations), "churn_groups": [g.name for g in fleet.groups.values() if g.churn],
        "watched": [(w.group, w.member_id, w.kind, w.stop_ms, w.deadline_ms) for w in fleet.watched.values()],
        "at_risk": scraper.at_risk, "cleared": scraper.cleared, "warned": scraper.warned,
        "timed_out": scraper.timed_out, "scrape_s": scraper.scrape_s,
        "scrape_bytes": scraper.bytes, "cpu_all_s": time.process_time()}))
