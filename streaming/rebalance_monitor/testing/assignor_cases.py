"""Generated `rebalance-monitor assign` cases for the differential tests against Kafka's own assignor classes
(testing.assignor_oracle): member and topic counts, equal and unequal subscriptions, subscriptions to topics the
cluster does not have, static members, previous assignments (balanced and skewed) with stale generations and
conflicting, duplicated and unknown claims, racks on members and partitions.

One generator, `build_case(draw, assignor, size)`, behind two sources of choices:
* `cases(assignor, size)`: a hypothesis strategy (the default test run: the same cases each run, shrinking);
* `random_case(rnd, assignor, mix)`: plain `random.Random` (the soak: no hypothesis bookkeeping per choice, sizes
  from a mix of SMALL, MEDIUM and LARGE).
Every choice's first or lowest option is the simplest one, so hypothesis shrinks towards plain cases.
`testing.assignor_coverage` counts which of these dimensions a case actually exercises.
"""
from __future__ import annotations

import base64
import random
import uuid
from dataclasses import dataclass

from hypothesis import strategies as st

CLIENT = ("range", "roundrobin", "sticky", "cooperative-sticky")
SERVER = ("uniform", "server-range")
SHARE = ("simple",)  # KIP-932 share groups: members share partitions
RACKS = ("r0", "r1", "r2")
MISSING_TOPICS = ("deleted-topic", "not-yet-created")
TOPIC_PREFIXES = ("t", "topic-", "orders.", "Events_")
CLIENT_IDS = ("consumer-app", "svc", "Ärger", "c\U0001f600")  # non-ASCII ones hash and sort as UTF-16 in Java


@dataclass(frozen=True)
class Size:
    members: int
    topics: int
    partitions: int
    min_members: int = 1


SMALL = Size(members=12, topics=4, partitions=24)
MEDIUM = Size(members=50, topics=10, partitions=100, min_members=5)
LARGE = Size(members=200, topics=20, partitions=500, min_members=51)
SIZES = {"small": SMALL, "medium": MEDIUM, "large": LARGE}
# The soak's mix: mostly small and medium cases, which cost milliseconds, and some large groups, which cost up to
# seconds (Kafka's eager sticky assignor on a few thousand partitions and unequal subscriptions).
SOAK_MIX = ((SMALL, 0.80), (MEDIUM, 0.19), (LARGE, 0.01))
# The default test run's mix (tests/assignors/test_assignors_vs_kafka.py): a few hundred cases an assignor reach every
# dimension of testing.assignor_coverage.
DEFAULT_RUN_MIX = ((SMALL, 0.70), (MEDIUM, 0.25), (LARGE, 0.05))
MIXES = {"soak": SOAK_MIX, "default": DEFAULT_RUN_MIX, **{n: ((s, 1.0),) for n, s in SIZES.items()}}


class _Hypothesis:
    """Choices drawn by hypothesis; `chance` is False at the shrink target."""

    def __init__(self, draw):
        self._draw = draw

    def int(self, lo: int, hi: int) -> int:
        return self._draw(st.integers(lo, hi))

    def chance(self, percent: int) -> bool:
        return self._draw(st.integers(0, 99)) >= 100 - percent

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def subset(self, seq, min_size: int = 1) -> list:
        return self._draw(st.lists(st.sampled_from(seq), min_size=min_size, unique=True))

    def raw16(self) -> bytes:
        return self._draw(st.binary(min_size=16, max_size=16))


class _Random:
    def __init__(self, rnd: random.Random):
        self._r = rnd

    def int(self, lo: int, hi: int) -> int:
        return lo + int(self._r.random() * (hi - lo + 1))

    def chance(self, percent: int) -> bool:
        return self._r.random() * 100 < percent

    def pick(self, seq):
        return seq[int(self._r.random() * len(seq))]

    def subset(self, seq, min_size: int = 1) -> list:
        return self._r.sample(seq, self.int(min_size, len(seq)))

    def raw16(self) -> bytes:
        return self._r.randbytes(16)


def kafka_uuid(raw: bytes) -> str:
    """A Kafka Uuid's text form (URL-safe base64 of its 16 bytes, no padding)."""
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@st.composite
def cases(draw, assignor: str, size: Size = SMALL) -> dict:
    return build_case(_Hypothesis(draw), assignor, size)


def random_case(rnd: random.Random, assignor: str, mix=SOAK_MIX) -> dict:
    return sized_random_case(rnd, assignor, mix)[1]


def seeded_case(seed, assignor: str, index: int, mix=SOAK_MIX) -> tuple[str, dict]:
    """(size class, case) number `index` of `assignor` for `seed`: the same on every run and machine."""
    return sized_random_case(random.Random(f"{seed}:{assignor}:{index}"), assignor, mix)


def sized_random_case(rnd: random.Random, assignor: str, mix=SOAK_MIX) -> tuple[str, dict]:
    """(the size class drawn from the mix, the case)."""
    x = rnd.random()
    for size, share in mix:
        x -= share
        if x < 0:
            break
    return next(n for n, s in SIZES.items() if s == size), build_case(_Random(rnd), assignor, size)


def build_case(d, assignor: str, size: Size) -> dict:
    n_topics = d.int(1, size.topics)
    topics = [f"{d.pick(TOPIC_PREFIXES)}{i}" for i in range(n_topics)]
    # most topics are small for their size class, about a third can be as large as it allows
    ppt = {t: d.int(1, size.partitions if d.chance(35) else max(1, size.partitions // 10)) for t in topics}
    ids = _member_ids(d, size)
    members = [{"member_id": mid, "topics": subs} for mid, subs in zip(ids, _subscriptions(d, topics, len(ids)))]
    _static(d, members, size)
    case = {"assignor": assignor, "partitions_per_topic": ppt, "members": members}
    _racks(d, case)
    if assignor in SHARE:
        _shared_previous(d, case)
        _assignable(d, case)
    else:
        _previous(d, assignor, case)
    if assignor in SERVER + SHARE:
        # distinct ids, none of the two Kafka reserves (all zeros, and zeros ending in one)
        # (a deleted topic keeps its id in the members' targets)
        named = topics + list(MISSING_TOPICS)
        ids: dict = {}
        while len(ids) < len(named):
            raw = d.raw16()
            if raw[:15] != bytes(15):
                ids.setdefault(kafka_uuid(raw), None)
        case["topic_ids"] = dict(zip(named, ids))
    return case


def _member_ids(d, size: Size) -> list:
    n = d.int(size.min_members, size.members)
    style = d.int(0, 3)
    out: dict = {}
    for i in range(n):
        s = style if style < 3 else d.int(0, 2)
        if s == 0:  # short names: ties in Java's string order and hash buckets are easy to reach
            mid = f"m{i:03d}-{d.int(0, 999)}"
        elif s == 1:  # a classic member id: client id, dash, random UUID
            mid = f"{d.pick(CLIENT_IDS)}-{i + 1}-{uuid.UUID(bytes=d.raw16())}"
        else:  # a KIP-848 member id: a Kafka Uuid
            mid = kafka_uuid(d.raw16())
        out.setdefault(mid, None)
    return list(out)


def _subscriptions(d, topics: list, n: int) -> list:
    mode = d.pick(("equal", "unequal", "one differs"))
    common = d.subset(topics)
    reorder = d.chance(20)  # equal subscriptions, listed in different orders
    odd = d.int(0, n - 1)
    missing = d.subset(MISSING_TOPICS) if d.chance(20) else []
    everyone_missing = d.chance(30)
    only_missing = d.int(0, n - 1) if missing and d.chance(30) else -1
    out = []
    for i in range(n):
        if mode == "unequal" or mode == "one differs" and i == odd:
            subs = d.subset(topics)
        else:
            subs = list(reversed(common)) if reorder and i % 2 else list(common)
        if missing and (everyone_missing or d.chance(50)):
            subs = subs + missing
        if i == only_missing:  # subscribed to nothing the cluster has
            subs = list(missing)
        out.append(subs)
    return out


def _static(d, members: list, size: Size) -> None:
    mode = d.pick(("none", "some", "all"))
    if mode == "none":
        return
    for i, m in enumerate(members):
        if mode == "all" or d.chance(50):
            # instance ids sort in another order than the member ids
            m["group_instance_id"] = f"{d.pick(('app', 'Pod', 'host'))}-{d.int(0, 10 * size.members)}-{i}"


def _racks(d, case: dict) -> None:
    mode = d.pick(("none", "both", "members", "partitions"))
    if mode == "none":
        return
    if mode in ("both", "members"):
        for m in case["members"]:
            m["rack"] = None if d.chance(20) else d.pick(RACKS)
    if mode in ("both", "partitions"):
        everywhere = d.chance(15)  # every partition on every rack: rack-aware assignment does not apply
        case["partition_racks"] = {
            t: [list(RACKS) if everywhere else [] if d.chance(3) else d.subset(RACKS) for _ in range(n)]
            for t, n in case["partitions_per_topic"].items()}


def _previous(d, assignor: str, case: dict) -> None:
    """Owned partitions (the server assignors: each member's current target) and, for the client assignors,
    generations: a previous assignment, balanced or skewed, partly stale, with conflicting, duplicated and unknown
    claims where the protocol allows them."""
    members, ppt = case["members"], case["partitions_per_topic"]
    mode = d.pick(("none", "balanced", "skewed"))
    if mode == "none":
        return
    all_tps = [(t, p) for t, n in ppt.items() for p in range(n)]
    subscribed = d.chance(70)  # the previous owners were subscribed to what they own (else: any member)
    top = d.int(1, 20)
    for m in members:
        m["owned_partitions"] = []
        if assignor in CLIENT:
            m["generation"] = None if d.chance(10) else d.int(max(1, top - 3), top)
    by_topic = {t: [m for m in members if t in m["topics"]] or members for t in ppt} if subscribed else None
    heavy = members[: max(1, len(members) // 4)]
    turn = d.int(0, len(members) - 1)
    for tp in all_tps:
        owners = by_topic[tp[0]] if subscribed else members
        if mode == "balanced":  # round robin, a few partitions unowned
            if d.chance(92):
                owners[turn % len(owners)]["owned_partitions"].append(list(tp))
                turn += 1
        elif d.chance(80):  # skewed: most partitions on the first few members
            pool = heavy if d.chance(80) else owners
            pool[d.int(0, len(pool) - 1)]["owned_partitions"].append(list(tp))
    with_owned = [m for m in members if m["owned_partitions"]]
    if assignor in CLIENT and len(members) > 1 and all_tps and d.chance(40):
        # conflicting claims: a partition also claimed by another member (same or older generation)
        for _ in range(d.int(1, 3)):
            tp = list(all_tps[d.int(0, len(all_tps) - 1)])
            m = members[d.int(0, len(members) - 1)]
            if tp not in m["owned_partitions"]:
                m["owned_partitions"].append(tp)
    if with_owned and d.chance(15):  # a claim listed twice by its member
        m = with_owned[d.int(0, len(with_owned) - 1)]
        m["owned_partitions"].append(list(m["owned_partitions"][d.int(0, len(m["owned_partitions"]) - 1)]))
    if d.chance(10):
        # a claim on a topic the cluster no longer has or, from a client, on a partition beyond its count (the topic
        # was recreated smaller; the coordinator's targets name topics by id, so they cannot be out of range)
        m = members[d.int(0, len(members) - 1)]
        t = d.pick(list(ppt))
        beyond = assignor in CLIENT and d.chance(50)
        m["owned_partitions"].append([t, ppt[t] + d.int(0, 2)] if beyond else [MISSING_TOPICS[0], d.int(0, 3)])


def _shared_previous(d, case: dict) -> None:
    """A share group's current targets: partitions held by one member or several, members that joined since (none),
    members holding more or fewer than their share, partitions of topics they no longer subscribe to or the cluster
    no longer has."""
    members, ppt = case["members"], case["partitions_per_topic"]
    mode = d.pick(("none", "shared", "skewed"))
    if mode == "none":
        return
    subscribed = d.chance(70)  # each holder subscribed to the topic (else: any member)
    joined = [m for m in members if d.chance(25)]  # new members: nothing yet
    holders_max = d.int(1, 4)
    for m in members:
        m["owned_partitions"] = []
    for t, n in ppt.items():
        pool = [m for m in members if m not in joined and (not subscribed or t in m["topics"])]
        if not pool:
            continue
        for p in range(n):
            if not d.chance(85):
                continue
            k = d.int(1, holders_max) if mode == "shared" else 1
            owners = [pool[d.int(0, len(pool) - 1)] if mode == "shared" else pool[d.int(0, max(0, len(pool) // 4))]
                      for _ in range(k)]
            for m in owners:
                if [t, p] not in m["owned_partitions"]:
                    m["owned_partitions"].append([t, p])
    if d.chance(10):  # a target naming a topic the cluster no longer has
        m = members[d.int(0, len(members) - 1)]
        m["owned_partitions"].append([MISSING_TOPICS[0], d.int(0, 3)])


def _assignable(d, case: dict) -> None:
    """The partitions whose share-group state is initialised (the coordinator hands out only those): all (no map),
    or some topics wholly, some partly, some not at all."""
    if not d.chance(40):
        return
    out = {}
    for t, n in case["partitions_per_topic"].items():
        how = d.pick(("all", "some", "none"))
        if how == "all":
            out[t] = list(range(n))
        elif how == "some":
            out[t] = [p for p in range(n) if d.chance(60)]
    case["assignable_partitions"] = out
