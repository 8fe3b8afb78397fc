"""`rebalance-monitor client-metrics`: the KIP-714 client-metrics subscription the broker plugin needs (the
metric name prefixes it reads, pushed every 2-10 s), set up, listed and deleted from Python, without Kafka's
`kafka-client-metrics.sh`.

A subscription is a broker config resource of type CLIENT_METRICS (16) with the keys `metrics` (name prefixes),
`interval.ms` and `match` (selectors `key=regex`). It is set with IncrementalAlterConfigs, read with
DescribeConfigs and listed with ListConfigResources (ListClientMetricsResources before Kafka 4.1: the same API key),
all through kafka-python's admin client (the base install); a subscription is deleted by deleting its keys.
Brokers 3.7 and later in KRaft mode have subscriptions.
"""
from __future__ import annotations

import argparse
import json
import re
import sys

from .kafka_connection import KafkaConnection

# The metric name prefixes the broker plugin reads (streaming/java: MemberMetrics.SUBSCRIPTION), Java consumers'
# heartbeat and poll clocks and every client's KIP-714 standard consumer metrics (rebalance totals and latency,
# poll idle ratio): `org.apache.kafka.consumer.coordinator.` covers the coordinator's, rebalances included.
SUBSCRIPTION_METRICS = ("org.apache.kafka.consumer.coordinator.", "org.apache.kafka.consumer.last.poll.",
                        "org.apache.kafka.consumer.time.between.poll.", "org.apache.kafka.consumer.poll.idle.ratio.")
DEFAULT_NAME = "rebalance-monitor"
DEFAULT_INTERVAL_MS = 5000
# the core's deadlines wait 1.5 push intervals for the next snapshot (core/group/client_metrics.py): 10 s at most
INTERVAL_RANGE_MS = (2000, 10_000)
MATCH_KEYS = ("client_id", "client_software_name", "client_software_version", "client_instance_id",
              "client_source_address", "client_source_port")
CONFIG_KEYS = ("metrics", "interval.ms", "match")
_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,249}")


def add_parser(sub) -> None:
    """The `client-metrics` command and its three actions."""
    c = sub.add_parser("client-metrics", help="the KIP-714 client-metrics subscription the broker plugin needs: "
                                              "set, list or delete it")
    actions = c.add_subparsers(dest="action", required=True)
    s = actions.add_parser("subscribe", help="create or replace a subscription asking clients for the plugin's "
                                             "metrics")
    _connection_args(s)
    s.add_argument("--name", type=_name, default=DEFAULT_NAME, help=f"the subscription's name ({DEFAULT_NAME})")
    lo, hi = INTERVAL_RANGE_MS
    s.add_argument("--interval-ms", type=_interval, default=DEFAULT_INTERVAL_MS,
                   help=f"push interval, {lo}..{hi} ms (default {DEFAULT_INTERVAL_MS})")
    s.add_argument("--match", type=_match, action="append", default=[], metavar="KEY=REGEX",
                   help="only clients whose KEY matches REGEX (repeatable); KEY one of " + ", ".join(MATCH_KEYS))
    l_ = actions.add_parser("list", help="the cluster's subscriptions, each with its metrics, interval and match")
    _connection_args(l_)
    l_.add_argument("--name", type=_name, help="only this subscription")
    d = actions.add_parser("delete", help="delete a subscription")
    _connection_args(d)
    d.add_argument("--name", type=_name, default=DEFAULT_NAME, help=f"the subscription's name ({DEFAULT_NAME})")
    c.set_defaults(func=run)


def _connection_args(p) -> None:
    p.add_argument("--bootstrap-server", help="the cluster (default: kafka.bootstrap_servers of --config)")
    p.add_argument("--config", help="config file: its kafka connection (servers, security)")


def _interval(text: str) -> int:
    lo, hi = INTERVAL_RANGE_MS
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not lo <= value <= hi:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed values are whole milliseconds from {lo} to {hi}")
    return value


def _match(text: str) -> tuple[str, str]:
    key, sep, regex = text.partition("=")
    if not sep or key not in MATCH_KEYS:
        raise argparse.ArgumentTypeError(f"{text!r}: KEY=REGEX with KEY one of {', '.join(MATCH_KEYS)}")
    if not regex or "," in regex:
        raise argparse.ArgumentTypeError(f"{text!r}: REGEX must be non-empty and without commas")
    try:
        re.compile(regex)
    except re.error as exc:
        raise argparse.ArgumentTypeError(f"{text!r}: REGEX is not a regular expression ({exc})") from None
    return key, regex


def _name(text: str) -> str:
    if not _NAME_RE.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r}: allowed are 1-249 letters, digits, '.', '_' and '-'")
    return text


def subscription_configs(interval_ms: int, match=()) -> dict[str, str]:
    """The config entries of a subscription (what kafka-client-metrics.sh --alter would set)."""
    return {"metrics": ",".join(SUBSCRIPTION_METRICS), "interval.ms": str(interval_ms),
            "match": ",".join(f"{k}={v}" for k, v in match)}


def _admin(args):
    from kafka.admin import KafkaAdminClient

    if args.config:
        from .config import load_config

        connection = load_config(args.config).kafka.connection()
    else:
        connection = KafkaConnection(bootstrap_servers=args.bootstrap_server or "localhost:9092")
    conf = connection.kafka_python()
    if args.bootstrap_server:
        conf["bootstrap_servers"] = args.bootstrap_server
    conf.setdefault("client_id", "rebalance-monitor-client-metrics")
    return KafkaAdminClient(**conf)


def _resource_type():
    from kafka.admin import ConfigResourceType

    rtype = getattr(ConfigResourceType, "CLIENT_METRICS", None)
    if rtype is None:
        raise RuntimeError("this kafka-python has no CLIENT_METRICS config resources: kafka-python >= 3.0 needed")
    return rtype


def _check(result: dict, name: str) -> None:
    outcome = next(iter(result.get("client_metrics", {}).values()), None) if result else None
    if outcome != "OK":
        raise RuntimeError(f"the broker refused subscription {name!r}: {outcome or result}")


def subscribe(admin, name: str, interval_ms: int, match=()) -> dict[str, str]:
    from kafka.admin import ConfigResource

    configs = subscription_configs(interval_ms, match)
    resource = ConfigResource(_resource_type(), name, configs=dict(configs))
    _check(admin.alter_configs([resource], raise_on_unknown=False, incremental=True), name)
    return configs


def delete(admin, name: str) -> None:
    from kafka.admin import AlterConfigOp, ConfigResource

    resource = ConfigResource(_resource_type(), name, configs={k: (AlterConfigOp.DELETE, None) for k in CONFIG_KEYS})
    _check(admin.alter_configs([resource], raise_on_unknown=False, incremental=True), name)


def describe(admin, names=None) -> dict[str, dict[str, str]]:
    """{subscription name: {metrics, interval.ms, match}} of the cluster's subscriptions (of `names` only)."""
    from kafka.admin import ConfigResource

    rtype = _resource_type()
    if names is None:
        names = admin.list_config_resources([rtype]).get("client_metrics", [])
    out = {}
    for name in sorted(names):
        got = admin.describe_configs([ConfigResource(rtype, name)], config_filter="all")
        entries = got.get("client_metrics", {}).get(name, {})
        values = {k: (entries.get(k) or {}).get("value") for k in CONFIG_KEYS}
        if any(values.values()):
            out[name] = {k: v or "" for k, v in values.items()}
    return out


def run(args) -> int:
    from .config import ConfigError

    try:
        admin = _admin(args)
    except ConfigError as exc:
        print(f"rebalance-monitor client-metrics: bad configuration: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - a connection or configuration failure, said plainly
        print(f"rebalance-monitor client-metrics: cannot connect: {exc}", file=sys.stderr)
        return 1
    try:
        if args.action == "subscribe":
            configs = subscribe(admin, args.name, args.interval_ms, args.match)
            print(json.dumps({"subscribed": args.name, **configs}))
        elif args.action == "delete":
            delete(admin, args.name)
            print(json.dumps({"deleted": args.name}))
        else:
            for name, configs in describe(admin, [args.name] if args.name else None).items():
                print(json.dumps({"name": name, **configs}))
        return 0
    except Exception as exc:  # noqa: BLE001 - the broker's answer, said plainly
        print(f"rebalance-monitor client-metrics {args.action}: {exc}", file=sys.stderr)
        return 1
    finally:
        admin.close()
