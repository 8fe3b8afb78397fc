"""Which runner runs a member: its spec's client. kafka-python (instrumented) runs in `live_members.Member`;
confluent-kafka (instrumented librdkafka) and Java (kafka-clients, uninstrumented) in `other_clients`. All share
`Member`'s snapshot interface. Above both modules, so neither imports the other back."""
from __future__ import annotations

from rebalance_monitor.instrument.emitter import Emitter

from .live_members import Member, MemberSpec
from .other_clients import ConfluentMember, JavaMember


def make_member(spec: MemberSpec, emitter: Emitter):
    """The runner of `spec.client` (all share `Member`'s snapshot interface)."""
    if spec.client == "kafka-python":
        if spec.group_protocol != "classic":
            raise ValueError("kafka-python members speak the classic protocol only")
        return Member(spec, emitter)
    if spec.client == "confluent":
        return ConfluentMember(spec, emitter)
    if spec.client == "java":
        return JavaMember(spec)
    raise ValueError(f"unknown member client {spec.client!r}: kafka-python, confluent or java")
