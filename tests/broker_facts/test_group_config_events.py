"""The translation of DescribeConfigs answers into `group_config` events (broker_facts/group_configs.py), family by
family: a broker's `group.<type>.*` settings, a group's own overrides only where it sets them itself; the streams
family's num.standby.replicas, a count (0 is a value)."""
from __future__ import annotations

from rebalance_monitor.broker_facts.group_configs import GROUP_OVERRIDE_SOURCE, broker_events, group_events


def _entry(value, source="DEFAULT_CONFIG"):
    return {"value": value, "config_source": source}


def test_the_brokers_streams_settings_with_num_standby_replicas():
    entries = {"group.streams.session.timeout.ms": _entry("45000"), "group.streams.num.standby.replicas": _entry("0"),
               "group.consumer.session.timeout.ms": _entry("45000")}
    events = {e["group_type"]: e for e in broker_events(entries, 7)}
    assert events["streams"]["num_standby_replicas"] == 0 and events["streams"]["session_timeout_ms"] == 45000
    assert "num_standby_replicas" not in events["consumer"]
    assert "streams" not in {e["group_type"] for e in broker_events({"group.streams.num.standby.replicas":
                                                                      _entry("-1")}, 7)}


def test_a_groups_own_num_standby_replicas_is_an_override_only_where_it_sets_it():
    own = {"streams.num.standby.replicas": _entry("2", GROUP_OVERRIDE_SOURCE)}
    (ev,) = [e for e in group_events("app", own, 9) if e["group_type"] == "streams"]
    assert (ev["group"], ev["source"], ev["num_standby_replicas"]) == ("app", "group", 2)
    inherited = {"streams.num.standby.replicas": _entry("2")}
    assert [e for e in group_events("app", inherited, 9) if e["group_type"] == "streams"] == []
