"""groups.allow / groups.deny: one predicate (core/group_filter.py) for replay, the job and the exporter."""
from __future__ import annotations

import re

from hypothesis import given, settings as hsettings, strategies as st

from rebalance_monitor.core.group_filter import GroupFilter
from rebalance_monitor.metrics.updater import MetricsUpdater

names = st.text(alphabet="abc-", max_size=6)


def test_whole_name_must_match_and_deny_wins():
    f = GroupFilter(allow="orders-.*", deny=".*-canary")
    assert f.keeps("orders-eu") and f("orders-us")
    assert not f.keeps("old-orders-eu")  # allow must match the whole name, not a part
    assert not f.keeps("orders-canary")
    assert f.keeps("")  # cluster-wide events always pass
    assert not GroupFilter().active and GroupFilter("", None).keeps("anything")


def test_options_round_trip():
    f = GroupFilter(allow="a.*", deny="ab")
    g = GroupFilter.from_options(f.to_options())
    assert (g.allow, g.deny) == ("a.*", "ab")
    assert GroupFilter.from_options(None) is None and GroupFilter.from_options({"allow": None}) is None


@hsettings(max_examples=300, deadline=None)
@given(names, st.sampled_from([None, "a.*", "b", "[ab]+", ".*c"]), st.sampled_from([None, ".*-", "a", "c.*"]))
def test_the_exporter_admits_exactly_the_groups_the_filter_keeps(name, allow, deny):
    expected = (allow is None or re.fullmatch(allow, name) is not None) and \
        (deny is None or re.fullmatch(deny, name) is None)
    assert GroupFilter(allow, deny).keeps(name) == (expected or name == "")
    if name:
        u = MetricsUpdater(group_allow=allow, group_deny=deny, clock=lambda: 1000.0)
        u.apply([{"kind": "group_status", "group": name, "ts": 1, "state": "Stable", "generation": 1,
                  "members": []}])
        assert (name in u._groups) == expected
