"""A real Apache Kafka broker's log names its release: the coordinator-log file of the project's broker (the file a
log shipper tails) decodes to a `broker_release` event of the broker's own release, and the other start-up lines
of that logger are skipped, none rejected."""
from __future__ import annotations

import pytest

from rebalance_monitor.inputs.coordinator_log import decode_log_record

from helpers.eventually import eventually

pytestmark = [pytest.mark.integration]


def test_the_brokers_log_names_its_release(broker):
    def releases():
        lines = broker.coordinator_log.read_text(errors="replace").splitlines()
        decoded = [decode_log_record(line) for line in lines]
        found = [e["release"] for d in decoded for e in d.events if e["type"] == "broker_release"]
        return (decoded, found) if found else None

    decoded, found = eventually(releases, 60, "the broker's Kafka version line in its coordinator log")
    assert set(found) == {broker.version}
    assert not [d for d in decoded if d.record_type == "log:broker_release" and not d.ok]
