"""Hold the monitor's three witnesses of a scenario against the clients' own view and against each other.

A witness's view of a group is what the monitor reconstructs from one input: its generation records (number,
members, leader, assignment, causes) and member_timeout records, up to the scenario's teardown. The clients'
view (the ground truth) is the scenario's `stable` points: the generation and member ids every member itself
reported, from its own rebalance callbacks.

`compare` returns a list of `Finding`s, each a difference with the rule it breaks. A test asserts there are
none beyond the blind spots it names (what an input cannot see, with the reason).
"""
from __future__ import annotations

from dataclasses import dataclass

from ..core.vocabulary import RecordKind

EVENTS, LOG, OFFSETS = "events", "coordinator-log", "offsets-topic"


@dataclass(frozen=True)
class Finding:
    scenario: str
    witness: str
    rule: str
    detail: str
    seen: frozenset = frozenset()  # what the witness showed, where the rule compares sets of member ids
    want: frozenset = frozenset()  # what the clients (or the other witnesses) showed

    @property
    def partial(self) -> bool:
        """The witness showed part of what it should, and nothing else (a blind spot, not an error)."""
        return bool(self.want) and self.seen < self.want

    def __str__(self) -> str:
        return f"{self.scenario} / {self.witness}: {self.rule}: {self.detail}"


@dataclass
class View:
    """One witness's records of one group before the scenario's teardown."""
    generations: dict
    timeouts: list

    @classmethod
    def of(cls, records: list[dict], group: str, cutoff_ms: int | None) -> "View":
        gens, timeouts = {}, []
        for r in records:
            if r.get("group") != group:
                continue
            t = r.get("completed_ms") or r.get("deadline_ms") or r.get("ts") or 0
            if cutoff_ms is not None and t > cutoff_ms:
                continue
            if r["kind"] == RecordKind.GENERATION:
                gens[r["generation"]] = r
            elif r["kind"] == RecordKind.MEMBER_TIMEOUT:
                timeouts.append((r["timeout"], r["member_id"]))
        return cls(gens, sorted(timeouts))


def cause_members(gen: dict) -> set[str]:
    return {c["member_id"] for c in gen["causes"] if c.get("member_id")}


def cause_names(gen: dict) -> set[str]:
    return {c["cause"] for c in gen["causes"]}


def compare(scenario: str, truth: dict, views: dict[str, View]) -> list[Finding]:
    """Differences between the witnesses' views and the clients' (truth: `stable` points of the scenario)."""
    out: list[Finding] = []

    def find(witness, rule, detail, seen=(), want=()):
        out.append(Finding(scenario, witness, rule, detail, frozenset(seen), frozenset(want)))

    previous = None
    for point in truth["stable"]:
        gen, ids = point["generation"], sorted(point["member_ids"])
        if previous is not None and previous["generation"] == gen:
            # the same generation under new member ids: a static member rejoined without a rebalance. Every
            # witness keeps the generation it reported; none may report a newer one.
            for w, view in views.items():
                newer = [g for g in view.generations if g > gen]
                if newer:
                    find(w, "no generation after a static rejoin", f"reported {newer}")
            previous = point
            continue
        previous = point
        for w, view in views.items():
            rec = view.generations.get(gen)
            if rec is None:
                find(w, "clients' generation reported", f"generation {gen} missing (has {sorted(view.generations)})")
            elif sorted(rec["members"]) != ids:
                find(w, "members as the clients saw them", f"generation {gen}: {sorted(rec['members'])} != {ids}",
                     rec["members"], ids)
    names = list(views)
    common = set.intersection(*(set(v.generations) for v in views.values())) if views else set()
    first_truth = min((p["generation"] for p in truth["stable"]), default=0)
    for w in names:
        extra = sorted(g for g in views[w].generations if g >= first_truth and
                       any(g not in views[o].generations for o in names if o != w))
        if extra:
            find(w, "generations the other witnesses agree on", f"only here: {extra}")
    for gen in sorted(common):
        leaders = {w: views[w].generations[gen].get("leader") for w in names}
        known = {lead for lead in leaders.values() if lead}
        if len(known) > 1:
            find("all", "one leader per generation", f"generation {gen}: {leaders}")
        if gen <= first_truth:
            # the generations that form the group: members joining within milliseconds of each other, and which
            # of them a witness credits with the rebalance depends on the order its input saw them in
            continue
        members = {w: cause_members(views[w].generations[gen]) for w in names}
        if EVENTS in members and LOG in members and members[EVENTS] != members[LOG]:
            find(LOG, "causes name the members the clients name", f"generation {gen}: {members[LOG]} != "
                                                                   f"{members[EVENTS]}", members[LOG], members[EVENTS])
        if OFFSETS in members and not members[OFFSETS] <= set().union(*(members[w] for w in names if w != OFFSETS)):
            find(OFFSETS, "causes name members the others name", f"generation {gen}: {members}")
    if EVENTS in views and OFFSETS in views:
        # the whole assignment, topics by name (KIP-848 records name topic ids: the decoder resolves them)
        compared = 0
        common = sorted(set(views[EVENTS].generations) & set(views[OFFSETS].generations))
        for gen in common:
            a = views[EVENTS].generations[gen].get("assignment")
            b = views[OFFSETS].generations[gen].get("assignment")
            if a is not None and b is not None:
                compared += 1
                if a != b:
                    find(OFFSETS, "assignment as the clients got it", f"generation {gen}: {b} != {a}")
        if common and not compared:
            find(OFFSETS, "an assignment held against the clients'", f"no generation of {common} has both")
    if EVENTS in views and LOG in views and views[EVENTS].timeouts != views[LOG].timeouts:
        find(LOG, "the same member timeouts", f"{views[LOG].timeouts} != {views[EVENTS].timeouts}",
             views[LOG].timeouts, views[EVENTS].timeouts)
    return out


def witnesses_of(expect: dict) -> tuple[str, ...]:
    """The inputs that can see a scenario's group: the scenario's `witnesses` (a group of uninstrumented Java
    consumers has no events; default: all three)."""
    return tuple(expect.get("witnesses", (EVENTS, LOG, OFFSETS)))


def blind_spot(version: str, f, kip848: bool = False) -> str | None:
    """Why a finding is what the input cannot see (and not an error of the monitor), or None. `kip848`: the
    group speaks KIP-848 (its crashed member is seen by every input, and its assignments are compared by topic
    name: it has no blind spot of its own left)."""
    if f.witness != LOG or not f.partial:
        return None
    if f.rule == "causes name the members the clients name":
        return ("the coordinator logs the member whose join or leave starts a rebalance; a member that rejoins "
                "while the group is already rebalancing (kafka-python's leader after a metadata change) is not "
                "named")
    if f.rule == "the same member timeouts" and all(kind == "poll" for kind, _m in f.want - f.seen):
        return ("kafka-python's heartbeat thread leaves on a poll timeout without a reason on the wire: the log "
                "says `client reason: not provided`, a plain leave (the Java client's reason names the poll "
                "timeout)")
    if f.rule == "members as the clients saw them" and version.startswith("3."):
        return ("Kafka 3.x logs a member that joins while the group is already rebalancing only at DEBUG "
                "(`Pending dynamic member ... Adding to the group now`): at INFO the log names members only when "
                "they start a rebalance, leave or lead")
    return None
