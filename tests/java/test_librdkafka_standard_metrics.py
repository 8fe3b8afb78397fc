"""Case (d): confluent-kafka consumers (librdkafka) push only KIP-714's standard metrics, with their group and no
heartbeat or poll clock (librdkafka 2.16 adds its member id, in a resource attribute of its own, `member_id`, once it
has joined). On the Kafka 4.4 broker with the plugin (tests/java/conftest.py: a 2 s subscription for every client),
real confluent-kafka consumers in a group: their pushes arrive as `client_metrics` events naming the group, client id
and member; replayed with `__consumer_offsets`, the group's status shows each client's standard metrics (poll idle
ratio, rebalance latency) for its client instance, and no heartbeat or poll evidence of any member. (A close is
the coordinator's to tell: librdkafka's last push came after it had left, naming no member, in our runs.)"""
from __future__ import annotations

import json
import threading

import pytest

from helpers.eventually import eventually
from helpers.java_telemetry import events_of, records_of

from rebalance_monitor.testing.kafka_install import KAFKA_VERSION

pytestmark = pytest.mark.integration

EVENTS = "rebalance-events"  # the plugin_broker fixture's


def test_confluent_kafka_consumers_standard_metrics_are_shown_as_theirs_not_as_member_evidence(plugin_broker,
                                                                                                unique):
    if plugin_broker.version != KAFKA_VERSION:
        pytest.skip("one broker is enough for librdkafka's pushes: Kafka 4.4 with the ExporterPlugin")
    ck = pytest.importorskip("confluent_kafka", reason="confluent-kafka (the dev/fast extra) is not installed")
    bootstrap = plugin_broker.bootstrap
    topic, group = f"t-{unique}", f"g-{unique}"
    plugin_broker.create_topics({topic: 2})
    clients = ("rd-a", "rd-b")
    stops = {c: threading.Event() for c in clients}

    def consume(client_id):
        # enable.metrics.push is librdkafka's default (true); stated here as what the test relies on
        c = ck.Consumer({"bootstrap.servers": bootstrap, "group.id": group, "client.id": client_id,
                         "enable.metrics.push": True, "session.timeout.ms": 6000})
        c.subscribe([topic])
        try:
            while not stops[client_id].is_set():
                c.poll(0.2)
        finally:
            c.close()
    threads = {c: threading.Thread(target=consume, args=(c,), daemon=True) for c in clients}
    for t in threads.values():
        t.start()
    try:
        def pushes(client_id):
            return [e for e in events_of(bootstrap, EVENTS, group) if e["type"] == "client_metrics"
                    and e.get("client_id") == client_id and e.get("rebalance_latency_avg_ms") is not None
                    and e["member_id"]]  # (the pushes before its join name no member)
        for c in clients:
            e = eventually(lambda c=c: pushes(c), 90, f"{c}'s standard metrics", interval_s=1.0)[-1]
            assert e["member_id"].startswith(c + "-") and e["source"] == "kip714" and e["host"] == "127.0.0.1", e
            assert "last_heartbeat_ms_ago" not in e and "last_poll_ms_ago" not in e, e
            assert 0 <= e["poll_idle_ratio"] <= 1 and e["client_instance_id"], e

        def status():
            recs = records_of(bootstrap, EVENTS, group, status=True)
            gens = [r for r in recs if r["kind"] == "generation" and len(r["members"]) == 2]
            st = [r for r in recs if r["kind"] == "group_status"]
            if not gens or not st or {c["client_id"] for c in st[-1]["client_standard_metrics"]} != set(clients):
                return None
            return gens[-1], st[-1]
        gen, st = eventually(status, 60, "the standard metrics of both clients in the group's status", interval_s=2.0)
        assert all(m.startswith(("rd-a-", "rd-b-")) for m in gen["members"]), gen
        # never evidence of a member: no gap ratio for the members the coordinator records
        assert st["heartbeat_gap_ratios"] == {} and st["poll_gap_ratios"] == {}, st
        print(json.dumps(st["client_standard_metrics"]))
        for c in st["client_standard_metrics"]:
            assert c["member_id"] in gen["members"] and c["client_instance_id"], c
            assert 0 <= c["poll_idle_ratio"] <= 1, c
            assert c["rebalance_latency_total_ms"] is not None and c["rebalance_latency_max_ms"] >= 0, c
            assert c["rebalances_total"] is None, c  # librdkafka pushes no rebalance count
    finally:
        for c in clients:
            stops[c].set()
            threads[c].join(timeout=30)
