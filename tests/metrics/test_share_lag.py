"""A share group's lag in the exported families (no broker: the real broker's answer is
tests/inputs/test_share_group_lag_on_kafka.py): the share coordinator's lag per partition where the broker gave
one, else log-end minus share-partition start offset; the start offset as the committed offset; the lag sum, the
time lag and the coarser granularities over the same values; and the broker poller asking share groups with
DescribeShareGroupOffsets, not OffsetFetch."""
from __future__ import annotations

import pytest

from rebalance_monitor.metrics.broker_offsets import BrokerOffsetsPoller
from rebalance_monitor.metrics.updater import MetricsUpdater

from helpers.exposition import parse, value

T0 = 1_700_000_000_000
G = {"group": "sg", "group_type": "share"}


def status(group="sg", group_type="share"):
    return {"kind": "group_status", "group": group, "ts": T0, "group_type": group_type, "state": "Stable",
            "generation": 3, "members": 1}


def share_record(offsets, lags, ts=T0):
    return {"kind": "offsets_committed", "group": "sg", "ts": ts, "member_id": None, "source": "broker",
            "group_type": "share", "offsets": offsets, "share_lag": lags}


def ends(*entries, ts=T0):
    return {"kind": "end_offsets", "group": "", "ts": ts, "source": "broker", "offsets": list(entries)}


def test_the_brokers_lag_is_exported_and_without_it_end_minus_start():
    u = MetricsUpdater(clock=lambda: T0 / 1000)
    u.apply([status(), ends(["t", 0, 100], ["t", 1, 50]),
             # partition 0: start 40, 25 records at or above it acknowledged (lag 35, not 60); partition 1: no lag
             share_record([["t", 0, 40], ["t", 1, 10]], [["t", 0, 35], ["t", 1, None]])])
    s = parse(u.render())
    assert value(s, "kafka_consumergroup_lag", topic="t", partition="0", **G) == 35
    assert value(s, "kafka_consumergroup_lag", topic="t", partition="1", **G) == 40
    assert value(s, "kafka_consumergroup_committed_offset", topic="t", partition="0", **G) == 40
    assert value(s, "kafka_consumergroup_lag_sum", **G) == 75
    # the broker's lag follows the next poll, and a lag it no longer gives falls back to end - start
    u.apply([share_record([["t", 0, 45], ["t", 1, 10]], [["t", 0, None], ["t", 1, 3]], ts=T0 + 1)])
    s = parse(u.render())
    assert value(s, "kafka_consumergroup_lag", topic="t", partition="0", **G) == 55
    assert value(s, "kafka_consumergroup_lag", topic="t", partition="1", **G) == 3
    assert value(s, "kafka_consumergroup_lag_sum", **G) == 58


def test_the_time_lag_is_the_age_of_the_record_at_the_start_offset():
    u = MetricsUpdater(clock=lambda: (T0 + 100_000) / 1000)
    u.apply([status(), ends(["t", 0, 0]), ends(["t", 0, 100], ts=T0 + 100_000),
             share_record([["t", 0, 50]], [["t", 0, 20]], ts=T0 + 100_000)])
    s = parse(u.render())
    # record 50 was produced at about T0 + 51 s (100 records in 100 s): 49 s old
    assert value(s, "kafka_consumergroup_lag_seconds", **G) == pytest.approx(49.0, abs=0.01)
    u.apply([share_record([["t", 0, 50]], [["t", 0, 0]], ts=T0 + 100_001)])   # all acknowledged
    assert value(parse(u.render()), "kafka_consumergroup_lag_seconds", **G) == 0.0


@pytest.mark.parametrize("granularity,labels,want", [("topic", {"topic": "t"}, 35 + 40), ("group", {}, 75)])
def test_coarser_levels_add_the_same_lags(granularity, labels, want):
    u = MetricsUpdater(clock=lambda: T0 / 1000, lag_granularity=granularity)
    u.apply([status(), ends(["t", 0, 100], ["t", 1, 50]),
             share_record([["t", 0, 40], ["t", 1, 10]], [["t", 0, 35], ["t", 1, None]])])
    s = parse(u.render())
    assert value(s, "kafka_consumergroup_lag", **labels, **G) == want
    assert value(s, "kafka_consumergroup_lag_sum", **G) == 75


def test_the_lag_at_a_rebalance_start_is_the_share_lag():
    u = MetricsUpdater(clock=lambda: T0 / 1000)
    u.apply([status(), ends(["t", 0, 100]), share_record([["t", 0, 40]], [["t", 0, 35]]),
             {"kind": "rebalance_started", "group": "sg", "ts": T0 + 5, "started_ms": T0 + 5, "generation": 3}])
    assert value(parse(u.render()), "kafka_consumergroup_lag_sum_at_rebalance_start", **G) == 35


def test_bad_share_lag_entries_are_left_out():
    u = MetricsUpdater(clock=lambda: T0 / 1000)
    u.apply([status(), ends(["t", 0, 100]),
             share_record([["t", 0, 40]], [["t", 0, -1], ["t", 0], "x", ["t", 0, True], ["t", 0, "7"]])])
    assert value(parse(u.render()), "kafka_consumergroup_lag", topic="t", partition="0", **G) == 60


def test_the_poller_asks_share_groups_their_share_offsets_not_offset_fetch():
    class FakeOffsets:  # stands in for the admin client: this test is about which groups are asked how
        def __init__(self):
            self.asked = []

        def records(self, groups, extra_partitions=(), now_ms=None, share_groups=()):
            self.asked.append((list(groups), list(share_groups)))
            return [share_record([["t", 0, 40]], [["t", 0, 35]]), ends(["t", 0, 100])]

    u = MetricsUpdater(clock=lambda: T0 / 1000)
    u.apply([status(), status(group="classic-g", group_type="classic")])
    assert (u.share_groups(), u.groups_without_commits()) == (["sg"], ["classic-g"])
    fake = FakeOffsets()
    BrokerOffsetsPoller(u, fake).poll_once()
    assert fake.asked == [(["classic-g"], ["sg"])]
    assert value(parse(u.render()), "kafka_consumergroup_lag", topic="t", partition="0", **G) == 35
