"""One rebalance in progress: its triggers and causes, who joined, who synced which generation."""
from __future__ import annotations

from .causes import UNKNOWN


class Rebalance:
    __slots__ = (
        "started_ms", "from_generation", "causes", "joined", "anonymous_joins", "synced", "generation",
        "protocol", "leader", "formed_ms", "last_sync_ms", "coordinator_members", "coordinator_confirmed",
        "announced",
    )

    def __init__(self, started_ms: int | None, from_generation: int | None):
        self.started_ms = started_ms
        self.from_generation = from_generation
        self.causes: list[dict] = []
        self.joined: dict[str, int] = {}  # member id -> join time, for members that (re)joined this round
        self.anonymous_joins: list[list] = []  # [client_id, host, details] of joins sent before a member id was assigned
        self.synced: dict[str, tuple | None] = {}  # member id -> assignment (None: synced, assignment unknown)
        self.generation: int | None = None  # the generation this rebalance formed, once known
        self.protocol: str | None = None
        self.leader: str | None = None
        self.formed_ms: int | None = None  # first evidence that the generation formed
        self.last_sync_ms: int | None = None
        self.coordinator_members: list | None = None  # MemberInfo-like dicts from the coordinator
        self.coordinator_confirmed = False
        self.announced = False  # rebalance_started record emitted

    def trigger(self, at_ms: int | None) -> None:
        if at_ms is not None and (self.started_ms is None or at_ms < self.started_ms):
            self.started_ms = at_ms

    def add_cause(self, cause: str, who: dict | None = None, reason: str | None = None) -> None:
        """Add a cause once. A cause without a member merges into the same cause with a member and the
        other way round; `unknown` placeholders are dropped at completion when a real cause is known."""
        entry = {"cause": cause}
        if who:
            entry.update(who)
        if reason:
            entry["reason"] = reason[:300]
        mid = entry.get("member_id")
        for i, existing in enumerate(self.causes):
            if existing["cause"] != cause:
                continue
            other = existing.get("member_id")
            if other == mid:
                if reason and "reason" not in existing:
                    existing["reason"] = entry["reason"]
                return
            if other is None and mid is not None and _same_client(existing, entry):
                if "reason" in existing and "reason" not in entry:
                    entry["reason"] = existing["reason"]
                self.causes[i] = entry
                return
            if mid is None:
                return
        self.causes.append(entry)

    def final_causes(self) -> list[dict]:
        concrete = [c for c in self.causes if c["cause"] != UNKNOWN]
        if concrete:
            return concrete
        return self.causes[:1] if self.causes else [{"cause": UNKNOWN}]

    def expected_ids(self) -> set[str] | None:
        if self.coordinator_members is not None:
            return {m["member_id"] for m in self.coordinator_members}
        return None

    def settle_deadline(self, settle_ms: int) -> int | None:
        if self.formed_ms is None:
            return None
        return self.formed_ms + settle_ms

    def to_state(self) -> list:
        return [self.started_ms, self.from_generation, self.causes, self.joined, self.anonymous_joins,
                {k: (list(map(list, v)) if v is not None else None) for k, v in self.synced.items()},
                self.generation, self.protocol, self.leader, self.formed_ms, self.last_sync_ms,
                self.coordinator_members, self.coordinator_confirmed, self.announced]

    @classmethod
    def from_state(cls, s: list) -> "Rebalance":
        r = cls.__new__(cls)
        (r.started_ms, r.from_generation, r.causes, r.joined, r.anonymous_joins, synced, r.generation,
         r.protocol, r.leader, r.formed_ms, r.last_sync_ms, r.coordinator_members, r.coordinator_confirmed,
         r.announced) = s
        r.synced = {k: (tuple(tuple(x) for x in v) if v is not None else None) for k, v in synced.items()}
        return r


def _same_client(a: dict, b: dict) -> bool:
    """Whether two cause entries may describe the same client (unknown fields match anything)."""
    for key in ("client_id", "host"):
        if key in a and key in b and a[key] != b[key]:
            return False
    return True
