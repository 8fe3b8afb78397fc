"""Each metric of the updater checked against the exposition text, parsed by prometheus_client's parser."""
import json

import pytest
from hypothesis import given, settings, strategies as st

from rebalance_monitor.metrics.catalogue import CATALOGUE
from rebalance_monitor.metrics.updater import MetricsUpdater

from helpers.exposition import families, parse, series, value


class Clock:
    def __init__(self, t=1_700_000_000.0):
        self.t = t

    def __call__(self):
        return self.t


def gen(group="g", generation=1, completed_ms=1_700_000_000_000, causes=("member_joined",), members=("m1", "m2"),
        duration_ms=1500, **kw):
    r = {"kind": "generation", "group": group, "generation": generation, "protocol": "range", "leader": members[0]
         if members else None, "started_ms": None if duration_ms is None else completed_ms - duration_ms,
         "completed_ms": completed_ms, "ts": completed_ms, "duration_ms": duration_ms,
         "causes": [{"cause": c} for c in causes], "members": list(members), "assignment": None,
         "expected_assignment": None, "mismatched_partitions": 0, "unassigned_partitions": 0,
         "partitions_moved": 2, "imbalance": 1, "min_moves": 1}
    r.update(kw)
    return r


def scrape(u):
    return parse(u.render())


def test_every_catalogue_family_is_announced():
    u = MetricsUpdater()
    fams = families(u.render())
    text = u.render()
    for spec in CATALOGUE:
        assert f"# TYPE {spec.name} {spec.prom_type}\n" in text
    assert fams  # parses


def test_generation_counts_once_per_cause_and_once_per_generation():
    u = MetricsUpdater()
    u.apply([gen(causes=("member_joined", "member_left", "member_left")), gen(generation=2, completed_ms=1_700_000_010_000,
                                                                           causes=())])
    s = scrape(u)
    assert series(s, "kafka_consumergroup_rebalances_total") == {
        (("cause", "member_joined"), ("group", "g")): 1.0,
        (("cause", "member_left"), ("group", "g")): 1.0,
        (("cause", "unknown"), ("group", "g")): 1.0,
    }
    assert value(s, "kafka_consumergroup_generations_total", group="g") == 2
    assert value(s, "kafka_consumergroup_generation", group="g") == 2
    assert value(s, "kafka_consumergroup_partitions_moved_total", group="g") == 4
    assert value(s, "kafka_consumergroup_last_rebalance_timestamp_seconds", group="g") == 1_700_000_010.0


def test_replayed_generation_does_not_double_count():
    u = MetricsUpdater()
    batch = [gen(), gen(generation=2, completed_ms=1_700_000_005_000)]
    u.apply(batch)
    u.apply(batch)
    s = scrape(u)
    assert value(s, "kafka_consumergroup_generations_total", group="g") == 2
    assert value(s, "kafka_consumergroup_rebalances_total", group="g", cause="member_joined") == 2
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_count", group="g") == 2


def test_rebalance_duration_histogram():
    u = MetricsUpdater()
    u.apply([gen(duration_ms=300), gen(generation=2, completed_ms=1_700_000_100_000, duration_ms=45_000),
             gen(generation=3, completed_ms=1_700_000_200_000, duration_ms=None)])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_bucket", group="g", le="0.25") == 0
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_bucket", group="g", le="0.5") == 1
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_bucket", group="g", le="30.0") == 1
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_bucket", group="g", le="60.0") == 2
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_bucket", group="g", le="+Inf") == 2
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_count", group="g") == 2   # unknown start
    assert value(s, "kafka_consumergroup_rebalance_duration_seconds_sum", group="g") == pytest.approx(45.3)
    assert value(s, "kafka_consumergroup_generations_total", group="g") == 3


def test_latest_generation_gauges_and_late_older_generation():
    u = MetricsUpdater()
    u.apply([gen(generation=5, completed_ms=1_700_000_050_000, mismatched_partitions=3, unassigned_partitions=1,
                 imbalance=2, partitions_moved=7, min_moves=4, protocol="cooperative-sticky", members=["a", "b", "c"])])
    u.apply([gen(generation=4, completed_ms=1_700_000_040_000, mismatched_partitions=0, partitions_moved=1,
                 min_moves=None, members=["a"])])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_generation", group="g") == 5
    assert value(s, "kafka_consumergroup_assignment_mismatched_partitions", group="g") == 3
    assert value(s, "kafka_consumergroup_unassigned_partitions", group="g") == 1
    assert value(s, "kafka_consumergroup_assignment_imbalance", group="g") == 2
    assert value(s, "kafka_consumergroup_needless_moves", group="g") == 3
    assert value(s, "kafka_consumergroup_members", group="g") == 3
    assert value(s, "kafka_consumergroup_protocol_info", group="g", protocol="cooperative-sticky") == 1
    assert value(s, "kafka_consumergroup_partitions_moved_total", group="g") == 8   # the late one counted too
    assert value(s, "kafka_consumergroup_generations_total", group="g") == 2


def test_unknown_expected_assignment_leaves_gauge_absent():
    u = MetricsUpdater()
    u.apply([gen(mismatched_partitions=None, min_moves=None)])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_assignment_mismatched_partitions", group="g") is None
    assert value(s, "kafka_consumergroup_needless_moves", group="g") is None


def test_group_status_state_one_hot_and_gauges():
    u = MetricsUpdater()
    u.apply([{"kind": "group_status", "group": "g", "ts": 1, "state": "CompletingRebalance", "generation": 7,
              "protocol": "range", "leader": "m1", "members": 4, "max_heartbeat_gap_ratio": 0.75,
              "heartbeat_gap_ratios": {"m1": 0.75}, "in_storm": True, "rebalancing_since_ms": 1,
              "coordinator_partition": 12}])
    s = scrape(u)
    states = series(s, "kafka_consumergroup_state")
    assert sum(states.values()) == 1 and len(states) == 5
    assert value(s, "kafka_consumergroup_state", group="g", state="CompletingRebalance") == 1
    assert value(s, "kafka_consumergroup_rebalance_in_progress", group="g") == 1
    assert value(s, "kafka_consumergroup_generation", group="g") == 7
    assert value(s, "kafka_consumergroup_members", group="g") == 4
    assert value(s, "kafka_consumergroup_heartbeat_gap_ratio", group="g") == 0.75
    assert value(s, "kafka_consumergroup_storm", group="g") == 1
    assert value(s, "kafka_consumergroup_coordinator_info", group="g", partition="12", broker="") == 1
    u.apply([{"kind": "coordinator", "group": "g", "ts": 2, "partition": 12, "broker": 3, "action": "elected"},
             {"kind": "group_status", "group": "g", "ts": 3, "state": "Stable", "generation": 8, "members": 4,
              "max_heartbeat_gap_ratio": None, "in_storm": False, "coordinator_partition": 12}])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_state", group="g", state="Stable") == 1
    assert value(s, "kafka_consumergroup_state", group="g", state="CompletingRebalance") == 0
    assert value(s, "kafka_consumergroup_rebalance_in_progress", group="g") == 0
    assert value(s, "kafka_consumergroup_heartbeat_gap_ratio", group="g") is None
    assert value(s, "kafka_consumergroup_coordinator_info", group="g", partition="12", broker="3") == 1
    u.apply([{"kind": "coordinator", "group": "g", "ts": 4, "partition": 12, "broker": 3, "action": "resigned"}])
    assert series(scrape(u), "kafka_consumergroup_coordinator_info") == {}


def test_member_timeouts_by_kind_client_and_host_deduplicated():
    u = MetricsUpdater()
    mt = {"kind": "member_timeout", "group": "g", "member_id": "m1", "timeout": "session", "last_seen_ms": 1,
          "deadline_ms": 2, "detected_ms": 3, "client_id": "c1", "host": "/10.0.0.1"}
    u.apply([mt, dict(mt), dict(mt, member_id="m2", detected_ms=5), dict(mt, timeout="poll", detected_ms=9)])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_member_timeouts_total", group="g", timeout="session", client_id="c1",
                 host="/10.0.0.1") == 2
    assert value(s, "kafka_consumergroup_member_timeouts_total", group="g", timeout="poll", client_id="c1",
                 host="/10.0.0.1") == 1


def test_storm_gauge_and_counter():
    u = MetricsUpdater()
    st_ = {"kind": "storm", "group": "g", "started_ms": 1000, "ended_ms": None, "rebalances": 4, "window_ms": 600000}
    u.apply([st_, dict(st_, rebalances=5)])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_storm", group="g") == 1
    assert value(s, "kafka_consumergroup_storms_total", group="g") == 1
    u.apply([dict(st_, ended_ms=9000)])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_storm", group="g") == 0
    assert value(s, "kafka_consumergroup_storms_total", group="g") == 1
    u.apply([dict(st_, started_ms=20000)])
    assert value(scrape(u), "kafka_consumergroup_storms_total", group="g") == 2


def test_lag_offsets_and_cache_invalidation_on_end_offset_moves():
    clock = Clock(100.0)
    u = MetricsUpdater(clock=clock)
    u.apply([{"kind": "offsets_committed", "group": "g", "ts": 90_000, "member_id": "m1",
              "offsets": [["t", 0, 40], ["t", 1, 12]]},
             {"kind": "end_offsets", "group": "", "ts": 90_000, "offsets": [["t", 0, 50], ["t", 1, 10], ["u", 0, 3]]}],
            now_ms=90_000)
    s = scrape(u)
    assert value(s, "kafka_consumergroup_lag", group="g", topic="t", partition="0") == 10
    assert value(s, "kafka_consumergroup_lag", group="g", topic="t", partition="1") == 0   # never negative
    assert value(s, "kafka_consumergroup_lag_sum", group="g") == 10
    assert value(s, "kafka_consumergroup_committed_offset", group="g", topic="t", partition="1") == 12
    assert value(s, "kafka_topic_partition_end_offset", topic="u", partition="0") == 3
    assert value(s, "kafka_consumergroup_lag_seconds", group="g") is None   # one sample: unknown age
    # the end moves on: lag and time lag follow without any new commit
    u.apply([{"kind": "end_offsets", "group": "", "ts": 100_000, "offsets": [["t", 0, 150], ["t", 1, 12]]}],
            now_ms=100_000)
    s = scrape(u)
    assert value(s, "kafka_consumergroup_lag", group="g", topic="t", partition="0") == 110
    assert value(s, "kafka_consumergroup_lag_sum", group="g") == 110
    assert value(s, "kafka_topic_partition_end_offset", topic="t", partition="0") == 150
    # record 40 produced before the first sample (end 50 at 90 s, 10 records/s): the end passed 40 (reached 41)
    # 0.9 s before 90 s -> 10.9 s old at 100 s
    assert value(s, "kafka_consumergroup_lag_seconds", group="g") == pytest.approx(10.9)
    # an older commit arriving late does not move the committed offset back
    u.apply([{"kind": "offsets_committed", "group": "g", "ts": 80_000, "offsets": [["t", 0, 1]]}], now_ms=100_000)
    assert value(scrape(u), "kafka_consumergroup_committed_offset", group="g", topic="t", partition="0") == 40


def test_lag_growth_snapshot_at_rebalance_start():
    u = MetricsUpdater()
    u.apply([{"kind": "offsets_committed", "group": "g", "ts": 1, "offsets": [["t", 0, 10]]},
             {"kind": "end_offsets", "group": "", "ts": 1, "offsets": [["t", 0, 25]]},
             {"kind": "rebalance_started", "group": "g", "generation": 3, "started_ms": 1_700_000_000_000,
              "causes": [{"cause": "member_left"}]}])
    u.apply([{"kind": "end_offsets", "group": "", "ts": 2, "offsets": [["t", 0, 60]]}])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_lag_sum_at_rebalance_start", group="g") == 15
    assert value(s, "kafka_consumergroup_lag_sum", group="g") == 50
    assert value(s, "kafka_consumergroup_rebalance_in_progress", group="g") == 1
    assert value(s, "kafka_consumergroup_state", group="g", state="PreparingRebalance") == 1
    assert value(s, "kafka_consumergroup_last_rebalance_start_timestamp_seconds", group="g") == 1_700_000_000.0
    u.apply([gen(generation=4, completed_ms=1_700_000_003_000, causes=("member_left",))])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_rebalance_in_progress", group="g") == 0
    assert value(s, "kafka_consumergroup_state", group="g", state="Stable") == 1


def test_group_deleted_drops_every_series_of_the_group():
    u = MetricsUpdater()
    u.apply([gen(group="a"), gen(group="b"),
             {"kind": "offsets_committed", "group": "a", "ts": 1, "offsets": [["t", 0, 1]]},
             {"kind": "group_deleted", "group": "a", "ts": 5}])
    s = scrape(u)
    assert not [k for k in s if ("group", "a") in k[1]]
    assert value(s, "kafka_consumergroup_generations_total", group="b") == 1
    assert value(s, "rebalance_monitor_groups_tracked") == 1


def test_idle_groups_expire():
    clock = Clock(1000.0)
    u = MetricsUpdater(idle_group_ttl_s=60, clock=clock)
    u.apply([gen(group="old")])
    clock.t += 30
    u.apply([gen(group="new")])
    clock.t += 45
    s = scrape(u)
    assert value(s, "kafka_consumergroup_generations_total", group="old") is None
    assert value(s, "kafka_consumergroup_generations_total", group="new") == 1


def test_cardinality_cap_and_allow_deny_counted_once_per_group():
    u = MetricsUpdater(max_groups=2, group_allow=r"app-.*", group_deny=r"app-test-.*")
    recs = [gen(group=g) for g in ("app-1", "app-2", "app-3", "app-4", "other", "app-test-x")]
    u.apply(recs)
    u.apply(recs)   # the same groups again: not counted again
    s = scrape(u)
    assert value(s, "rebalance_monitor_groups_tracked") == 2
    assert value(s, "rebalance_monitor_groups_dropped_total", reason="max_groups") == 2
    assert value(s, "rebalance_monitor_groups_dropped_total", reason="denied") == 2
    assert {dict(k)["group"] for k in series(s, "kafka_consumergroup_generations_total")} == {"app-1", "app-2"}
    # room frees up: a dropped group is admitted on its next record
    u.apply([{"kind": "group_deleted", "group": "app-1", "ts": 1}, gen(group="app-3", generation=2)])
    s = scrape(u)
    assert value(s, "kafka_consumergroup_generations_total", group="app-3") == 1


def test_groups_over_the_cap_are_said_in_the_log_at_once_then_once_a_minute(caplog):
    clock = Clock()
    u = MetricsUpdater(max_groups=1, clock=clock)
    with caplog.at_level("WARNING", logger="rebalance_monitor.metrics"):
        u.apply([gen(group="kept"), gen(group="first-out")])
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 1 and "groups.max_groups (1) reached: group first-out not exported" in said[0]
        caplog.clear()
        u.apply([gen(group=f"out-{i}") for i in range(8)])  # within the minute: held, and said together
        u.apply([gen(group="out-0")])                        # counted once already: not said again
        assert caplog.records == []
        clock.t += 61
        u.apply([gen(group="late")])
        said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1
    assert "groups out-0, out-1, out-2, out-3, out-4 not exported and 4 more" in said[0]  # 8 + "late"
    assert value(scrape(u), "rebalance_monitor_groups_dropped_total", reason="max_groups") == 10


def test_groups_left_out_upstream_are_counted_once_with_their_batch():
    """The Spark job drops the events of groups groups.allow/deny exclude before the exporter sees them, and
    hands their names to apply_batch: counted once per group, and not again when Spark replays the batch."""
    u = MetricsUpdater(group_allow=r"app-.*")
    u.apply_batch(0, [gen(group="app-1")], left_out=["scratch", "tmp"])
    u.apply_batch(0, [gen(group="app-1")], left_out=["scratch", "tmp"])   # the same batch again
    u.apply_batch(1, [], left_out=["scratch", "other"])
    s = scrape(u)
    assert value(s, "rebalance_monitor_groups_dropped_total", reason="denied") == 3
    assert value(s, "rebalance_monitor_groups_tracked") == 1


def test_self_metrics_batches_ready_and_sinks():
    clock = Clock(1000.0)
    u = MetricsUpdater(clock=clock, ready_max_age_s=60)
    assert not u.is_ready()
    u.set_ready(True)
    u.record_batch(0, {"events": 10, "offsets-topic": 3}, {"bad_json": 2}, 0.2, 1234, 995_000, {"generation": 4})
    u.record_batch(0, {"events": 10}, {}, 0.2, 1234, 995_000, {"generation": 4})   # replayed batch id
    u.record_batch(1, {"events": 5}, {"bad_json": 1, "unknown_type": 1}, 3.0, 1300, 990_000, {"storm": 1},
                   notes={"unresolved_topic_id": 4})
    u.note_sink_error("kafka")
    u.note_sink_error("kafka")
    s = scrape(u)
    assert value(s, "rebalance_monitor_up") == 1
    assert value(s, "rebalance_monitor_ready") == 1 and u.is_ready()
    assert value(s, "rebalance_monitor_events_read_total", source="events") == 15
    assert value(s, "rebalance_monitor_events_read_total", source="offsets-topic") == 3
    assert value(s, "rebalance_monitor_rejects_total", reason="bad_json") == 3
    assert value(s, "rebalance_monitor_input_notes_total", reason="unresolved_topic_id") == 4
    assert value(s, "rebalance_monitor_batches_total") == 2
    assert value(s, "rebalance_monitor_batch_duration_seconds_count") == 2
    assert value(s, "rebalance_monitor_batch_duration_seconds_bucket", le="0.25") == 1
    assert value(s, "rebalance_monitor_state_rows") == 1300
    assert value(s, "rebalance_monitor_watermark_delay_seconds") == 10.0
    assert value(s, "rebalance_monitor_last_batch_timestamp_seconds") == 1000.0
    assert value(s, "rebalance_monitor_output_records_total", kind="generation") == 4
    assert value(s, "rebalance_monitor_sink_errors_total", sink="kafka") == 2
    clock.t += 61          # no batch for longer than ready_max_age_s
    assert not u.is_ready()
    assert value(scrape(u), "rebalance_monitor_ready") == 0
    u.set_up(False)
    assert value(scrape(u), "rebalance_monitor_up") == 0


def test_label_values_are_escaped():
    u = MetricsUpdater()
    weird = 'we"ird\\group\nname'
    u.apply([gen(group=weird)])
    assert value(scrape(u), "kafka_consumergroup_generations_total", group=weird) == 1


record_st = st.one_of(
    st.builds(lambda g, n, c, ms: gen(group=g, generation=n, completed_ms=ms, causes=c),
              st.sampled_from(["a", "b"]), st.integers(0, 5), st.lists(st.sampled_from(["member_joined", "unknown"]),
                                                                        max_size=2), st.integers(0, 3)),
    st.builds(lambda g, t, ms: {"kind": "member_timeout", "group": g, "member_id": "m", "timeout": t,
                                "detected_ms": ms},
              st.sampled_from(["a", "b"]), st.sampled_from(["session", "poll"]), st.integers(0, 3)),
    st.builds(lambda g, ms, end: {"kind": "storm", "group": g, "started_ms": ms, "ended_ms": end},
              st.sampled_from(["a", "b"]), st.integers(0, 3), st.none() | st.integers(5, 6)),
    st.builds(lambda g, st_: {"kind": "group_status", "group": g, "state": st_, "members": 1},
              st.sampled_from(["a", "b"]), st.sampled_from(["Stable", "PreparingRebalance", "Empty"])),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(record_st, max_size=6), max_size=8))
def test_counters_never_go_backwards(batches):
    u = MetricsUpdater()
    counters = {s.name for s in CATALOGUE if s.type in ("counter", "histogram")}
    prev: dict = {}
    for batch in batches:
        u.apply(batch)
        cur = {k: v for k, v in scrape(u).items()
               if any(k[0] == c or k[0].startswith(c + "_") for c in counters)}
        for k, v in prev.items():
            assert cur.get(k, v) >= v, k
            assert k in cur, f"counter series {k} disappeared without its group being deleted"
        prev = cur


def test_broker_path_for_groups_without_stream_commits():
    from rebalance_monitor.metrics.broker_offsets import BrokerOffsetsPoller

    class FakeOffsets:      # stands in for the admin client: this test is about which groups get polled
        def __init__(self):
            self.asked = []

        def records(self, groups, extra_partitions=(), now_ms=None):
            self.asked.append((list(groups), sorted(extra_partitions)))
            return [{"kind": "offsets_committed", "group": g, "ts": 5, "member_id": None, "source": "broker",
                     "offsets": [["t", 0, 3]]} for g in groups] + \
                   [{"kind": "end_offsets", "group": "", "ts": 5, "offsets": [["t", 0, 10], ["s", 0, 4]]}]

    u = MetricsUpdater()
    u.apply([gen(group="quiet"), gen(group="chatty"),
             {"kind": "offsets_committed", "group": "chatty", "ts": 1, "offsets": [["s", 0, 2]]}])
    assert u.groups_without_commits() == ["quiet"]
    fake = FakeOffsets()
    BrokerOffsetsPoller(u, fake, extra_groups=["other"]).poll_once()
    assert fake.asked == [(["other", "quiet"], [("s", 0)])]
    s = scrape(u)
    assert value(s, "kafka_consumergroup_lag", group="quiet", topic="t", partition="0") == 7
    assert value(s, "kafka_consumergroup_lag", group="chatty", topic="s", partition="0") == 2
    # broker-sourced commits keep a group on the broker path
    assert u.groups_without_commits() == ["other", "quiet"]


@pytest.mark.parametrize("granularity", ["partition", "topic", "group"])
def test_every_series_of_a_group_carries_its_type_and_follows_a_change(granularity):
    """The group's type (group_type label) comes from its generation and group_status records; until one says it
    the group is "unknown"; a change (a classic group upgraded to KIP-848) writes every line again under the new
    label, counters whole, and leaves no line under the old one."""
    from rebalance_monitor.metrics.catalogue import GROUP_KEY
    u = MetricsUpdater(clock=Clock(100.0), lag_granularity=granularity)
    u.apply([{"kind": "offsets_committed", "group": "g", "ts": 90_000, "offsets": [["t", 0, 40]]},
             {"kind": "end_offsets", "group": "", "ts": 90_000, "offsets": [["t", 0, 50]]}], now_ms=90_000)
    assert value(scrape(u), "kafka_consumergroup_lag_sum", group="g", group_type="unknown") == 10

    def types_of_group_lines():
        seen = {}
        for (name, labels), _v in scrape(u).items():
            d = dict(labels)
            if "group" in d:
                assert tuple(k for k, _ in sorted(labels) if k in GROUP_KEY) == tuple(sorted(GROUP_KEY)), name
                seen.setdefault(d["group_type"], set()).add(name)
        return seen

    u.apply([gen(group_type="classic")], now_ms=95_000)
    assert set(types_of_group_lines()) == {"classic"}
    assert value(scrape(u), "kafka_consumergroup_generations_total", group="g", group_type="classic") == 1
    u.apply([{"kind": "group_status", "group": "g", "ts": 96_000, "group_type": "consumer", "state": "Stable",
              "generation": 1, "members": 2}], now_ms=96_000)
    seen = types_of_group_lines()
    assert set(seen) == {"consumer"}
    assert {"kafka_consumergroup_lag_sum", "kafka_consumergroup_generations_total"} <= seen["consumer"]
    s = scrape(u)
    assert value(s, "kafka_consumergroup_generations_total", group="g", group_type="consumer") == 1
    assert value(s, "kafka_consumergroup_lag_sum", group="g", group_type="consumer") == 10
    # a record without a type (an older producer) leaves the label as it is
    u.apply([gen(generation=2, completed_ms=1_700_000_100_000)], now_ms=97_000)
    assert set(types_of_group_lines()) == {"consumer"}


def _streams_gen(generation, completed_ms, tasks, between, within, mismatched, members=None):
    return gen(generation=generation, completed_ms=completed_ms, protocol="sticky", group_type="streams",
               members=members or sorted(tasks), mismatched_partitions=None, partitions_moved=None, min_moves=None,
               imbalance=None, mismatched_tasks=mismatched, tasks_moved_between_processes=between,
               tasks_moved_within_process=within, tasks={
                   mid: {"process_id": p, "client_id": c, "epoch": generation, "active": [["0", x] for x in a],
                         "standby": [["0", x] for x in s], "warmup": []}
                   for mid, (p, c, a, s) in tasks.items()})


def test_a_streams_groups_tasks_per_member_moves_and_mismatches_survive_a_restart():
    u = MetricsUpdater()
    u.apply([_streams_gen(3, 1_700_000_030_000, {"m1": ("p1", "app-1-t1", (0, 1), (2,)),
                                                 "m2": ("p2", "app-2-t1", (2,), (0, 1))}, 1, 0, 0)])
    # the next generation: app-2's thread gone (its series drop), app-1's second thread took tasks within p1;
    # then the same record replayed (not counted twice) and a late older one (counted, gauges kept)
    later = _streams_gen(4, 1_700_000_040_000, {"m1": ("p1", "app-1-t1", (0,), ()),
                                                "m3": ("p1", "app-1-t2", (1, 2), ())}, 1, 1, 2)
    u.apply([later, later, _streams_gen(2, 1_700_000_020_000, {"m1": ("p1", "app-1-t1", (0,), ())}, 0, 3, 0)])
    s = scrape(u)
    assert series(s, "kafka_streamsgroup_member_tasks") == {
        (("client_id", "app-1-t1"), ("group", "g"), ("kind", "active")): 1,
        (("client_id", "app-1-t1"), ("group", "g"), ("kind", "standby")): 0,
        (("client_id", "app-1-t1"), ("group", "g"), ("kind", "warmup")): 0,
        (("client_id", "app-1-t2"), ("group", "g"), ("kind", "active")): 2,
        (("client_id", "app-1-t2"), ("group", "g"), ("kind", "standby")): 0,
        (("client_id", "app-1-t2"), ("group", "g"), ("kind", "warmup")): 0}
    assert value(s, "kafka_streamsgroup_tasks_moved_total", group="g", group_type="streams",
                 scope="between_processes") == 2
    assert value(s, "kafka_streamsgroup_tasks_moved_total", group="g", scope="within_process") == 4
    assert value(s, "kafka_streamsgroup_assignment_mismatched_tasks", group="g") == 2
    again = MetricsUpdater()
    again.load_state(json.loads(u.state_text(1)))
    assert {k: v for k, v in scrape(again).items() if "streamsgroup" in k[0]} == \
        {k: v for k, v in s.items() if "streamsgroup" in k[0]}
    # a generation whose tasks could not be checked: the gauge goes absent
    again.apply([_streams_gen(5, 1_700_000_050_000, {"m1": ("p1", "app-1-t1", (0, 1, 2), ())}, 0, 2, None)])
    s = scrape(again)
    assert value(s, "kafka_streamsgroup_assignment_mismatched_tasks", group="g") is None
    assert value(s, "kafka_streamsgroup_tasks_moved_total", group="g", scope="within_process") == 6
