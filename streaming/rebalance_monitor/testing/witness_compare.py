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

EVENTS, LOG, OFFSETS = "events", "coordinator-log", "offsets-topic"


@dataclass(frozen=True)
class Finding:
    scenario: str
    witness: str
    rule: str
    detail: str

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
            if r["kind"] == "generation":
                gens[r["generation"]] = r
            elif r["kind"] == "member_timeout":
                timeouts.append((r["timeout"], r["member_id"]))
        return cls(gens, sorted(timeouts))


def cause_members(gen: dict) -> set[str]:
    return {c["member_id"] for c in gen["causes"] if c.get("member_id")}


def cause_names(gen: dict) -> set[str]:
    return {c["cause"] for c in gen["causes"]}


def compare(scenario: str, truth: dict, views: dict[str, View]) -> list[Finding]:
    """Differences between the witnesses' views and the clients' (truth: `stable` points of the scenario)."""
    out: list[Finding] = []

    def find(witness, rule, detail):
        out.append(Finding(scenario, witness, rule, detail))

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
                find(w, "members as the clients saw them", f"generation {gen}: {sorted(rec['members'])} != {ids}")
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
        members = {w: cause_members(views[w].generations[gen]) for w in names}
        if EVENTS in members and LOG in members and members[EVENTS] != members[LOG]:
            find(LOG, "causes name the members the clients name", f"generation {gen}: {members[LOG]} != "
                                                                   f"{members[EVENTS]}")
        if OFFSETS in members and not members[OFFSETS] <= set().union(*(members[w] for w in names if w != OFFSETS)):
            find(OFFSETS, "causes name members the others name", f"generation {gen}: {members}")
    if EVENTS in views and OFFSETS in views:
        for gen in sorted(set(views[EVENTS].generations) & set(views[OFFSETS].generations)):
            a = views[EVENTS].generations[gen].get("assignment")
            b = views[OFFSETS].generations[gen].get("assignment")
            if a is not None and b is not None and a != b:
                find(OFFSETS, "assignment as the clients got it", f"generation {gen}: {b} != {a}")
    if EVENTS in views and LOG in views and views[EVENTS].timeouts != views[LOG].timeouts:
        find(LOG, "the same member timeouts", f"{views[LOG].timeouts} != {views[EVENTS].timeouts}")
    return out
