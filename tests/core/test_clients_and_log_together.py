"""The clients' events and the coordinator's log read together (without `__consumer_offsets`): a generation the
log completes before its members' syncs arrive (a client records its sync when the answer comes, after the log's
`Assignment received` and possibly after the next round's first line) keeps its record until those syncs come
or its settle window ends, so that it carries the clients' protocol and assignments with the log's reasons; a
member the log adds is the one its client's id-less join declared. The captured real data is held in
tests/witnesses (`test_inputs_read_together_keep_what_each_knew[...-events+coordinator-log]`)."""
from __future__ import annotations

from helpers.events import ev, join, kinds, run, sync, tps
from rebalance_monitor.core.events import parse_event
from rebalance_monitor.core.group import GroupMonitor
from rebalance_monitor.core.settings import CoreSettings


def _log_completes_first(late_sync_ts: int | None) -> list[dict]:
    """Member a joins; the log proves generation 1 (a leader named); b joins (the next round) before a's sync
    of generation 1 arrives at `late_sync_ts` (None: never)."""
    events = [ev("topic_partitions", 900, "", topics={"t": 4}),
              join(1000, "a"),
              ev("generation_completed", 1100, generation=1),
              ev("generation_completed", 1102, generation=1, leader="a"),
              join(1150, "b"),
              ev("rebalance_started", 1151, generation=1, reason="Adding new member b", member_id="b")]
    if late_sync_ts is not None:
        events.append(sync(late_sync_ts, "a", 1, tps("t", 0, 1, 2, 3), "a"))
    return events


def test_a_generation_the_log_completes_first_takes_the_late_sync():
    gens = kinds(run(_log_completes_first(1160)), "generation")
    first = gens[0]
    assert (first["generation"], first["members"], first["protocol"]) == (1, ["a"], "range")
    assert first["assignment"] == {"a": [["t", 0], ["t", 1], ["t", 2], ["t", 3]]}
    assert first["mismatched_partitions"] == 0 and first["expected_assignment"] is not None
    # b is the next round's, not generation 1's
    assert [c.get("member_id") for c in first["causes"]] == ["a"]


def test_without_the_sync_the_record_goes_out_at_the_end_of_its_settle_window():
    events = _log_completes_first(None) + [ev("rebalance_started", 9000, generation=1, reason="x")]
    out = run(events)
    gens = kinds(out, "generation")
    assert [(g["generation"], g["assignment"], g["mismatched_partitions"]) for g in gens] == [(1, None, None)]
    # emitted when the settle window (5 s from the first proof that it formed, 1100) ended, dated when completed
    assert gens[0]["completed_ms"] == 1102
    assert out.index(gens[0]) > out.index(next(r for r in out if r["kind"] == "rebalance_started"
                                               and r.get("generation") == 1))


def test_a_held_record_survives_the_snapshot():
    """The Spark job keeps the group between micro-batches as a snapshot: a record held in one batch is filled
    in the next."""
    settings = CoreSettings()
    g = GroupMonitor("g", settings)
    out = []
    for e in _log_completes_first(None):
        if e["group"] == "g":
            out += g.process(parse_event(e))
    assert kinds(out, "generation") == [] and g.held is not None
    again = GroupMonitor.from_state(g.to_state(), settings)
    out = again.process(parse_event(sync(1160, "a", 1, tps("t", 0, 1, 2, 3), "a")))
    assert [(r["generation"], r["assignment"]) for r in kinds(out, "generation")] == [
        (1, {"a": [["t", 0], ["t", 1], ["t", 2], ["t", 3]]})]
    assert again.held is None


def test_the_log_names_the_member_of_an_id_less_join():
    """Kafka 4.x: the client's only join has no member id; the log adds the member (`<client id>-<uuid>`)
    before the client's first event under it: the member subscribes to what that join declared."""
    mid = "c1-0fa9d8fe-1fb8-4c81-8733-5f5bf8016066"
    events = [ev("topic_partitions", 900, "", topics={"t": 2}),
              join(1000, "", client_id="c1", host="/10.0.0.1"),
              ev("join", 1080, member_id=mid, protocols=[], topics=[], reason="added to the group by the coordinator"),
              ev("rebalance_started", 1080, generation=0, reason=f"Adding new member {mid}", member_id=mid),
              ev("generation_completed", 1100, generation=1),
              ev("generation_completed", 1102, generation=1, leader=mid),
              sync(1103, mid, 1, tps("t", 0, 1), mid, protocol=None, client_id="c1", host="/10.0.0.1")]
    gen = kinds(run(events), "generation")[0]
    assert (gen["members"], gen["protocol"], gen["mismatched_partitions"]) == ([mid], "range", 0)
    assert [(c["cause"], c.get("client_id")) for c in gen["causes"]] == [("member_joined", "c1")]
