"""The broker's release from its log: the line Kafka's AppInfoParser logs as the broker starts becomes a cluster-wide
`broker_release` event (inputs/coordinator_log/broker_info.py); the other AppInfoParser lines, and the same words
from another logger, are not the monitor's."""
from __future__ import annotations

import pytest

from rebalance_monitor.core.events import BrokerRelease, Rejected, parse_event
from rebalance_monitor.core.runner import cluster_route
from rebalance_monitor.inputs.coordinator_log import decode_log_record

APP_INFO = "(org.apache.kafka.common.utils.AppInfoParser)"  # (3.x)
APP_INFO_4 = "(org.apache.kafka.common.utils.internals.AppInfoParser)"  # (4.4.0's broker, as it logged)
TS = 1_742_292_000_123  # 2025-03-18 10:00:00,123 UTC


@pytest.mark.parametrize("line, release", [
    (f"[2025-03-18 10:00:00,123] INFO Kafka version: 4.0.0 {APP_INFO}", "4.0.0"),
    (f"[2025-03-18 10:00:00,123] INFO Kafka version: 4.1.0-rc1 {APP_INFO}", "4.1.0-rc1"),
    (f"[2025-03-18 10:00:00,123] INFO Kafka version : 3.9.2 {APP_INFO}", "3.9.2"),  # (2.x spacing)
    (f"2025-03-18T10:00:00.123 INFO Kafka version: 4.4.0 {APP_INFO}", "4.4.0"),
    (f"[2025-03-18 10:00:00,123] INFO Kafka version: 4.4.0 {APP_INFO_4}", "4.4.0"),
])
def test_the_start_up_line_names_the_release(line, release):
    decoded = decode_log_record(line)
    assert decoded.ok and decoded.record_type == "log:broker_release"
    [event] = decoded.events
    parsed = parse_event(event)
    assert isinstance(parsed, BrokerRelease) and parsed.release == release and parsed.ts == TS
    assert parsed.group == "" and cluster_route(parsed.type, parsed.group) == "fan_out"


def test_a_shippers_wrapper_gives_the_time():
    line = (f'{{"@timestamp": "2025-03-18T10:00:01.000Z", "message": "[2025-03-18 10:00:00,123] INFO '
            f'Kafka version: 4.0.0 {APP_INFO}"}}')
    [event] = decode_log_record(line).events
    assert event["ts"] == TS + 877 and event["release"] == "4.0.0"


def test_without_a_time_it_is_counted_not_dropped():
    decoded = decode_log_record(f"INFO Kafka version: 4.0.0 {APP_INFO}")
    assert decoded.rejected_reason == "no_timestamp" and decoded.record_type == "log:broker_release"
    assert decode_log_record(f"INFO Kafka version: 4.0.0 {APP_INFO}", record_ts_ms=TS).events[0]["ts"] == TS


@pytest.mark.parametrize("line", [
    f"[2025-03-18 10:00:00,123] INFO Kafka commitId: 985bc99521dd22bb {APP_INFO}",
    f"[2025-03-18 10:00:00,123] INFO Kafka startTimeMs: 1742292000120 {APP_INFO}",
    f"[2025-03-18 10:00:00,123] INFO Kafka commitId: 1156b2752aaa28ea {APP_INFO_4}",
    f"[2025-03-18 10:00:00,123] INFO App info kafka.server for 1 unregistered {APP_INFO}",
    # the same words from another logger (an application's client): not a broker's release
    "[2025-03-18 10:00:00,123] INFO Kafka version: 4.0.0 (com.example.Startup)",
    "[2025-03-18 10:00:00,123] INFO Kafka version: 4.0.0",
])
def test_other_lines_are_skipped(line):
    decoded = decode_log_record(line)
    assert decoded.skipped and not decoded.events and decoded.rejected_reason is None


def test_a_malformed_event_is_rejected_by_the_parser():
    bad = {"v": 1, "type": "broker_release", "ts": TS, "group": ""}
    assert isinstance(parse_event(bad), Rejected)
