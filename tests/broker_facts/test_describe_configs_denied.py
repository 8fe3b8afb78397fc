"""A broker whose ACLs deny the monitor DESCRIBE_CONFIGS (Apache Kafka 4.4, StandardAuthorizer, the monitor on a
SASL/PLAIN listener as User:monitor, allowed everything else): the broker poller neither crashes nor publishes a
setting; the refusal is counted (`describe_configs_denied`) and logged once, with what to grant; and the core then
uses the configuration's fallback and says so (`timeout_source: config`). Once the ACL is gone, the next refresh
publishes the brokers' settings."""
from __future__ import annotations

import json
import logging

import pytest

from rebalance_monitor.broker_facts.poller import BrokerFactsPoller
from rebalance_monitor.testing.broker import Broker
from rebalance_monitor.testing.processes import free_port

pytestmark = pytest.mark.integration
SECRET = "monitor-secret"


@pytest.fixture(scope="module")
def acl_broker(tmp_path_factory):
    host = "127.0.0.1"
    port, controller, sasl = free_port(host), free_port(host), free_port(host)
    jaas = f'org.apache.kafka.common.security.plain.PlainLoginModule required user_monitor="{SECRET}";'
    b = Broker(port=port, controller_port=controller, log_path=str(tmp_path_factory.mktemp("acl") / "broker.log"),
               settings={
                   "listeners": f"PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller},SASL_PLAINTEXT://{host}:{sasl}",
                   "advertised.listeners": f"PLAINTEXT://{host}:{port},SASL_PLAINTEXT://{host}:{sasl}",
                   "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT",
                   "sasl.enabled.mechanisms": "PLAIN",
                   "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
                   "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                   "super.users": "User:ANONYMOUS",  # the broker's own listeners (and the test's admin)
                   "allow.everyone.if.no.acl.found": "true",
               }).start()
    b.sasl_bootstrap = f"{host}:{sasl}"
    yield b
    b.stop()


def _acls(action: str, bootstrap: str) -> None:
    from kafka.admin import (ACL, ACLOperation, ACLPermissionType, ACLResourcePatternType, KafkaAdminClient,
                             ResourcePattern, ResourceType)

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        acls = []
        for rtype, name in ((ResourceType.CLUSTER, "kafka-cluster"), (ResourceType.GROUP, "*")):
            pattern = ResourcePattern(rtype, name, ACLResourcePatternType.LITERAL)
            acls.append(ACL("User:monitor", "*", ACLOperation.ALL, ACLPermissionType.ALLOW, pattern))
            acls.append(ACL("User:monitor", "*", ACLOperation.DESCRIBE_CONFIGS, ACLPermissionType.DENY, pattern))
        if action == "add":
            result = admin.create_acls(acls)
            assert not result.get("failed"), result
        else:
            from kafka.admin import ACLFilter, ResourcePatternFilter
            for acl in acls:
                pf = ResourcePatternFilter(acl.resource_pattern.resource_type, acl.resource_pattern.resource_name,
                                           ACLResourcePatternType.LITERAL)
                admin.delete_acls([ACLFilter(acl.principal, acl.host, acl.operation, acl.permission_type, pf)])
    finally:
        admin.close()


def test_a_refused_describe_configs_is_counted_said_once_and_the_fallback_named(acl_broker, caplog):
    from kafka.admin import KafkaAdminClient

    _acls("add", acl_broker.bootstrap)
    admin = KafkaAdminClient(bootstrap_servers=acl_broker.sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
                             sasl_mechanism="PLAIN", sasl_plain_username="monitor", sasl_plain_password=SECRET)
    published, noted = [], []
    poller = BrokerFactsPoller(admin, lambda key, value: published.append(json.loads(value)), note=noted.append,
                               event_time=False)
    try:
        with caplog.at_level(logging.WARNING, logger="rebalance_monitor.broker_facts"):
            poller.note_groups(["orders"])
            poller.poll_once()
            poller.note_groups(["payments"])
            poller.poll_once()
        assert [e for e in published if e["type"] == "group_config"] == []
        assert noted.count("describe_configs_denied") >= 2 and poller.denied
        said = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
        assert len(said) == 1 and "DESCRIBE_CONFIGS" in said[0] and "kafka-acls" in said[0], said
        _acls("remove", acl_broker.bootstrap)
        assert poller.poll_once() > 0
        consumer = [e for e in published if e["type"] == "group_config" and e["group"] == ""
                    and e["group_type"] == "consumer"]
        assert consumer and consumer[0]["session_timeout_ms"] == 10_000 and not poller.denied
    finally:
        admin.close()
