"""The brokers' group settings and each group's overrides, read with DescribeConfigs (kafka-python's admin client,
the base install), as `group_config` events (contract extension; core/group/group_config.py applies them).

- The brokers: `group.consumer.session.timeout.ms`, `group.consumer.heartbeat.interval.ms`,
  `group.consumer.assignors` (the first is the default), and the same keys of the `streams` and `share` families
  where the broker has them, with the streams family's `group.streams.num.standby.replicas` -> one event per family, group "", `source` "broker".
- A group (config resource type GROUP, Kafka 4.0+): its `consumer.session.timeout.ms`,
  `consumer.heartbeat.interval.ms`, ... The broker answers every key, with where its value came from; only those
  the group sets itself (`DYNAMIC_GROUP_CONFIG`) are its overrides -> one event per family, `source` "group",
  with the overridden keys only (none: the group overrides nothing).

Pure translation below `ask_*`; the asking is the two `ask_*` functions.
"""
from __future__ import annotations

FAMILIES = ("consumer", "streams", "share")
# event field -> key suffix of the family's config
FIELDS = {"session_timeout_ms": "session.timeout.ms", "heartbeat_interval_ms": "heartbeat.interval.ms"}
# event field -> key suffix of the streams family's config (a count: 0 is a value)
STREAMS_COUNTS = {"num_standby_replicas": "num.standby.replicas"}
GROUP_OVERRIDE_SOURCE = "DYNAMIC_GROUP_CONFIG"


class Denied(Exception):
    """The broker refused DescribeConfigs (its ACLs): what to grant is in the message."""


def _int(value) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def _count(value) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n >= 0 else None


def _fields(family: str) -> list[tuple[str, str, object]]:
    """(event field, key suffix, parser) of a family's settings."""
    out = [(field, suffix, _int) for field, suffix in FIELDS.items()]
    if family == "streams":
        out += [(field, suffix, _count) for field, suffix in STREAMS_COUNTS.items()]
    return out


def broker_events(entries: dict[str, dict], ts: int) -> list[dict]:
    """The `group_config` events of one broker's DescribeConfigs answer (`entries`: {name: {"value": ...}})."""
    out = []
    for family in FAMILIES:
        ev = {"v": 1, "type": "group_config", "ts": ts, "group": "", "source": "broker", "group_type": family}
        for field, suffix, parse in _fields(family):
            n = parse((entries.get(f"group.{family}.{suffix}") or {}).get("value"))
            if n is not None:
                ev[field] = n
        if family == "consumer":
            names = (entries.get("group.consumer.assignors") or {}).get("value")
            if names:
                ev["assignors"] = [_assignor_name(n) for n in str(names).split(",") if n.strip()]
        if len(ev) > 6:  # the broker has this family
            out.append(ev)
    return out


def _assignor_name(value: str) -> str:
    """`uniform`, or a class name as the broker may list it (o.a.k.coordinator.group.assignor.UniformAssignor)."""
    name = value.strip()
    if "." not in name:
        return name
    short = name.rsplit(".", 1)[1]
    return short[:-len("Assignor")].lower() if short.endswith("Assignor") else short


def group_events(group: str, entries: dict[str, dict], ts: int, families=("consumer",)) -> list[dict]:
    """The `group_config` events of one group's DescribeConfigs answer: its own overrides, family by family
    (`families`: those to say even when the group overrides nothing in them)."""
    out = []
    for family in FAMILIES:
        ev = {"v": 1, "type": "group_config", "ts": ts, "group": group, "source": "group", "group_type": family}
        for field, suffix, parse in _fields(family):
            entry = entries.get(f"{family}.{suffix}") or {}
            n = parse(entry.get("value"))
            if n is not None and entry.get("config_source") == GROUP_OVERRIDE_SOURCE:
                ev[field] = n
        if len(ev) > 6 or family in families:
            out.append(ev)
    return out


# --- asking (kafka-python's admin client) ---------------------------------------------------------------
GRANT = ("grant the monitor's principal DESCRIBE_CONFIGS on the cluster (the brokers' group settings) and on the "
         "groups (their overrides), e.g. kafka-acls.sh --add --allow-principal User:<monitor> --operation "
         "DescribeConfigs --cluster, and --group '*'")


def _describe(admin, resources: list, node_id: int | None = None) -> dict[str, dict[str, dict]]:
    """DescribeConfigs of `resources` (kafka-python ConfigResources): {name: entries}. kafka-python's own
    `describe_configs` drops each resource's error code (a refused resource reads as one with no settings), so the
    request goes through its admin's connection manager here, and a refused resource raises `Denied`."""
    from kafka.admin import ConfigResourceType
    from kafka.errors import for_code

    request = admin._describe_configs_request(resources)

    async def ask():
        if node_id is None:
            return await admin._manager.send(request)
        return await admin._manager.send(request, node_id=node_id)

    response = admin._manager.run(ask)
    out: dict[str, dict[str, dict]] = {}
    for result in response.results:
        if result.error_code:
            error = for_code(result.error_code).__name__
            if "Authorization" in error:
                raise Denied(f"DescribeConfigs of {result.resource_name or 'the cluster'!r} refused ({error}): "
                             f"{GRANT}")
            raise RuntimeError(f"DescribeConfigs of {result.resource_name!r}: {error}")
        rtype = ConfigResourceType(result.resource_type)
        entries = {}
        for struct in result.configs:
            config = struct.to_dict()
            entries[admin._process_config(config, rtype)] = config
        out[result.resource_name] = entries
    return out


def ask_broker_configs(admin, broker_id: str | None = None) -> dict[str, dict]:
    """One broker's configuration entries ({name: {"value", "config_source", ...}}); `Denied` when refused."""
    from kafka.admin import ConfigResource, ConfigResourceType

    if broker_id is None:
        brokers = sorted(b["broker_id"] for b in admin.describe_cluster().get("brokers") or ())
        broker_id = str(brokers[0]) if brokers else "1"
    got = _describe(admin, [ConfigResource(ConfigResourceType.BROKER, str(broker_id))], node_id=int(broker_id))
    return got.get(str(broker_id)) or {}


def ask_group_configs(admin, groups: list[str]) -> dict[str, dict[str, dict]]:
    """{group: its configuration entries} (Kafka 4.0+ brokers); `Denied` when refused."""
    from kafka.admin import ConfigResource, ConfigResourceType

    if not groups:
        return {}
    return _describe(admin, [ConfigResource(ConfigResourceType.GROUP, g) for g in groups])
