"""Benchmark: our pure-Python Kafka assignors vs kafka-python's own, on the same inputs.

    .venv/bin/python bench/bench_assignors.py            # 1,000 members x 10,000 partitions
    .venv/bin/python bench/bench_assignors.py --quick    # 200 x 2,000 (smoke run)

Scenarios (all 10 topics):
  uniform    every member subscribes to every topic (1,000 partitions each); first assignment
  rebalance  the uniform group after one member is replaced: members report the previous
             sticky assignment (owned partitions + generation) -> constrained sticky path
  skewed     topic-0 has half the partitions; members subscribe to different subsets
             -> general (heterogeneous) sticky algorithm
kafka-python (kafka.coordinator.assignors.range / roundrobin / sticky) runs in a child process
with a time limit (--kp-timeout); "n/a" means it has no such assignor, ">Ns" that it was stopped.
Kafka's own Java classes (the assignor oracle of the tests, Kafka 4.4.0) run in one JVM: each case is run
--java-warmup times first, then timed inside the JVM.  Numbers are seconds, best of --repeat runs for Python.
The ratios: kafka-python / ours, and ours / Java.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import time


from rebalance_monitor.core.assignors import MemberSubscription, assign

OURS = ["range", "roundrobin", "sticky", "cooperative-sticky", "uniform", "server-range"]
KP = {"range": "range", "roundrobin": "roundrobin", "sticky": "sticky"}


def scenario(name: str, members: int, partitions: int):
    topics = [f"topic-{i}" for i in range(10)]
    if name in ("uniform", "rebalance"):
        ppt = {t: partitions // 10 for t in topics}
        ms = [MemberSubscription(f"consumer-{i:05d}", tuple(topics)) for i in range(members)]
        if name == "rebalance":
            prev = assign("sticky", ppt, ms)
            ms = [MemberSubscription(m.member_id, m.topics, None, tuple(prev[m.member_id]), 7)
                  for m in ms[1:]] + [MemberSubscription("consumer-new", tuple(topics))]
        return ppt, ms
    ppt = {"topic-0": partitions // 2}
    rest = partitions - ppt["topic-0"]
    for i, t in enumerate(topics[1:]):
        ppt[t] = rest // 9 + (1 if i < rest % 9 else 0)

    def subs(i):
        if i % 10 == 0:
            return tuple(topics)
        return ("topic-0", topics[1 + i % 9]) if i % 3 else (topics[1 + i % 9],)
    return ppt, [MemberSubscription(f"consumer-{i:05d}", subs(i)) for i in range(members)]


def _time(fn, repeat):
    best = None
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        d = time.perf_counter() - t
        best = d if best is None else min(best, d)
    return best


# --------------------------------------------------------------------------- kafka-python
class _Cluster:
    def __init__(self, ppt):
        self._ppt = ppt

    def partitions_for_topic(self, topic):
        n = self._ppt.get(topic)
        return None if n is None else set(range(n))

    def topics(self, *args, **kw):
        return set(self._ppt)


class _Member:
    def __init__(self, member_id, group_instance_id, metadata):
        self.member_id = member_id
        self.group_instance_id = group_instance_id
        self.metadata = metadata


def _kp_run(kind, ppt, members, repeat, queue):
    try:
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
        from kafka.structs import TopicPartition
        cls = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
               "sticky": StickyPartitionAssignor}[kind]
        kp_members = []
        for m in members:
            if kind == "sticky":
                owned = [TopicPartition(t, p) for t, p in m.owned_partitions]
                md = StickyPartitionAssignor._metadata(list(m.topics), owned or None,
                                                       m.generation if m.generation is not None else -1)
            else:
                md = cls.metadata(list(m.topics))
            kp_members.append(_Member(m.member_id, m.group_instance_id, md))
        cluster = _Cluster(ppt)
        assignor = cls() if kind == "sticky" else cls
        queue.put(("ok", _time(lambda: assignor.assign(cluster, kp_members), repeat)))
    except Exception as exc:  # report, don't hang the parent
        queue.put(("error", f"{type(exc).__name__}: {exc}"))


def kafka_python_time(kind, ppt, members, repeat, timeout):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_kp_run, args=(kind, ppt, members, repeat, q))
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.terminate()
        p.join()
        return None, f">{timeout:.0f}s"
    status, value = q.get() if not q.empty() else ("error", "no result")
    return (value, None) if status == "ok" else (None, value)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=10000)
    ap.add_argument("--quick", action="store_true", help="200 members x 2,000 partitions")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--kp-timeout", type=float, default=300.0)
    ap.add_argument("--no-kafka-python", action="store_true")
    ap.add_argument("--no-java", action="store_true", help="skip Kafka's Java assignors")
    ap.add_argument("--java-warmup", type=int, default=5)
    ap.add_argument("--assignors", default=",".join(OURS), help="comma-separated subset")
    ap.add_argument("--scenarios", default="uniform,rebalance,skewed", help="comma-separated subset")
    args = ap.parse_args(argv)
    if args.quick:
        args.members, args.partitions = 200, 2000
    print(f"# {args.members} members x {args.partitions} partitions, best of {args.repeat}")
    print(f"{'scenario':<10} {'assignor':<19} {'ours s':>9} {'kafka-python s':>15} {'kp/ours':>8} {'Java s':>9} "
          f"{'ours/Java':>9}")
    oracle = None
    if not args.no_java:
        from rebalance_monitor.testing.assignor_oracle import KafkaAssignorOracle

        oracle = KafkaAssignorOracle().start()
    try:
        for name in args.scenarios.split(","):
            ppt, members = scenario(name, args.members, args.partitions)
            for a in [a for a in OURS if a in args.assignors.split(",")]:
                ours = _time(lambda: assign(a, ppt, members), args.repeat)
                kp_s, note = None, "n/a"
                if a in KP and not args.no_kafka_python:
                    kp_s, note = kafka_python_time(KP[a], ppt, members, args.repeat, args.kp_timeout)
                kp_txt = f"{kp_s:.3f}" if kp_s is not None else note
                ratio = f"{kp_s / ours:.1f}x" if kp_s is not None and ours > 0 else "-"
                java_txt, java_ratio = "-", "-"
                if oracle is not None:
                    java_s = oracle.assign(_case(a, ppt, members), warmup=args.java_warmup, timed=True)["nanos"] / 1e9
                    java_txt, java_ratio = f"{java_s:.3f}", f"{ours / java_s:.1f}x" if java_s > 0 else "-"
                print(f"{name:<10} {a:<19} {ours:>9.3f} {kp_txt:>15} {ratio:>8} {java_txt:>9} {java_ratio:>9}",
                      flush=True)
    finally:
        if oracle is not None:
            oracle.close()


def _case(assignor, ppt, members) -> dict:
    """The `assign` case of a scenario, for Kafka's Java assignors (topic ids fixed, so both sides order alike)."""
    import base64
    import hashlib

    return {"assignor": assignor, "partitions_per_topic": dict(ppt),
            "topic_ids": {t: base64.urlsafe_b64encode(hashlib.md5(t.encode()).digest()).decode().rstrip("=")
                          for t in ppt},
            "members": [{"member_id": m.member_id, "topics": list(m.topics), "group_instance_id": m.group_instance_id,
                         "owned_partitions": [list(tp) for tp in m.owned_partitions], "generation": m.generation,
                         "rack": m.rack} for m in members]}


if __name__ == "__main__":
    main()
