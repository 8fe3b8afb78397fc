"""Hypothesis strategies for `rebalance-monitor assign` cases, for the differential tests against Kafka's own assignor
classes (testing.assignor_oracle): member and topic counts, equal and unequal subscriptions, subscriptions to
topics the cluster does not have, static members, previous assignments with stale, conflicting and duplicated
claims, racks on members and partitions, balanced and unbalanced previous targets for the server assignors.

`Size` bounds a run: SMALL for the default test run, LARGE for the soak (up to 200 members, 20 topics, 500
partitions a topic).
"""
from __future__ import annotations

import base64
from dataclasses import dataclass

from hypothesis import strategies as st

CLIENT = ("range", "roundrobin", "sticky", "cooperative-sticky")
SERVER = ("uniform", "server-range")
RACKS = ("r0", "r1", "r2")
MISSING_TOPIC = "deleted-topic"


@dataclass(frozen=True)
class Size:
    members: int
    topics: int
    partitions: int


SMALL = Size(members=12, topics=4, partitions=24)
LARGE = Size(members=200, topics=20, partitions=500)


def kafka_uuid(raw: bytes) -> str:
    """A Kafka Uuid's text form (URL-safe base64 of its 16 bytes, no padding)."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@st.composite
def cases(draw, assignor: str, size: Size = SMALL) -> dict:
    n_topics = draw(st.integers(1, size.topics))
    topics = [f"t{i}" for i in range(n_topics)]
    ppt = {t: draw(st.integers(1, size.partitions)) for t in topics}
    n_members = draw(st.integers(1, size.members))
    members = [f"m{i:03d}-{draw(st.integers(0, 999))}" for i in range(n_members)]
    members = list(dict.fromkeys(members))
    equal = draw(st.booleans())
    common = draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
    missing = draw(st.integers(0, 4)) == 0  # now and then a subscription to a topic the cluster lacks
    with_racks = draw(st.booleans())
    static = draw(st.booleans())
    out_members = []
    for i, mid in enumerate(members):
        subs = common if equal else draw(st.lists(st.sampled_from(topics), min_size=1, unique=True))
        subs = list(subs)
        if missing and draw(st.booleans()):
            subs.append(MISSING_TOPIC)
        m = {"member_id": mid, "topics": subs}
        if static and draw(st.booleans()):
            m["group_instance_id"] = f"instance-{draw(st.integers(0, 10 * size.members))}-{i}"
        if with_racks:
            m["rack"] = draw(st.one_of(st.none(), st.sampled_from(RACKS)))
        out_members.append(m)
    _previous(draw, assignor, ppt, out_members)
    case = {"assignor": assignor, "partitions_per_topic": ppt, "members": out_members}
    if with_racks:
        case["partition_racks"] = {t: [draw(st.lists(st.sampled_from(RACKS), min_size=1, max_size=3, unique=True))
                                       for _ in range(n)] for t, n in ppt.items()}
    if assignor in SERVER:
        # distinct ids, none of the two Kafka reserves (all zeros, and zeros ending in one)
        raw = draw(st.lists(st.binary(min_size=16, max_size=16).filter(lambda b: b[:15] != bytes(15)),
                            min_size=n_topics, max_size=n_topics, unique=True))
        case["topic_ids"] = {t: kafka_uuid(r) for t, r in zip(topics, raw)}
    return case


def _previous(draw, assignor: str, ppt: dict, members: list) -> None:
    """Owned partitions and generations: a previous assignment, partly stale, with conflicts and duplicates."""
    if assignor in ("range", "roundrobin", "server-range") or not members or draw(st.integers(0, 3)) == 0:
        return
    all_tps = [(t, p) for t, n in ppt.items() for p in range(n)]
    balanced = draw(st.booleans())
    top = draw(st.integers(1, 20))
    for m in members:
        m["owned_partitions"] = []
        if assignor != "uniform":
            m["generation"] = draw(st.one_of(st.none(), st.integers(max(1, top - 3), top)))
    if balanced:
        for i, tp in enumerate(all_tps):  # round robin over the members, some partitions left out
            if draw(st.integers(0, 9)) > 0:
                members[i % len(members)]["owned_partitions"].append(list(tp))
    else:  # skewed: most partitions on the first few members
        heavy = members[: max(1, len(members) // 4)]
        for tp in all_tps:
            if draw(st.integers(0, 9)) > 1:
                owner = heavy[draw(st.integers(0, len(heavy) - 1))] if draw(st.integers(0, 4)) else \
                    members[draw(st.integers(0, len(members) - 1))]
                owner["owned_partitions"].append(list(tp))
    if assignor != "uniform" and len(members) > 1 and all_tps and draw(st.booleans()):
        # conflicting claims: a partition also claimed by another member (same or older generation)
        for _ in range(draw(st.integers(1, 3))):
            tp = list(all_tps[draw(st.integers(0, len(all_tps) - 1))])
            m = members[draw(st.integers(0, len(members) - 1))]
            if tp not in m["owned_partitions"]:
                m["owned_partitions"].append(tp)
