"""Several Kafka clusters from one deployment: the configuration's `clusters:` list (config.py builds each item).

Each item names a cluster and sets what differs between clusters: `kafka` (its connection, its inputs, its
brokers' release) and `groups` (its allow and deny lists, its cap). Every other key, and every key of those two
sections an item leaves out, is the top level's. Without `clusters:` the configuration is one cluster, named by
`kafka.cluster_name` (`default` unless set): the single-cluster configuration, unchanged.

A name is kept exactly as written (case included: MSK's names are mixed case) and must be a path segment: letters,
digits, `.`, `_` and `-`, starting with a letter or digit. Two names that differ only in case are refused, since a
case-insensitive file system would give them one checkpoint.

Paths: the cluster whose name is the top level's `kafka.cluster_name` keeps the top level's checkpoint, history and
dead-letter paths, so a single-cluster deployment's state, exported counters and history carry over when its
configuration becomes a list; every other cluster's are `<path>/clusters/<name>`.

Environment overrides reach an item as `RM__CLUSTERS__<index or name>__<section>__<key>`: the index counts from 0,
the name is matched ignoring case, with `_` standing for `-` or `.` (an environment variable's name has neither).
"""
from __future__ import annotations

import re

from .config_values import ConfigError, EnvText
from .files import join

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
ITEM_KEYS = ("name", "kafka", "groups")
CLUSTERS_DIR = "clusters"


def take_items(data: dict) -> list[dict]:
    """Remove `clusters` from the loaded tree and return its items, checked for shape, names and duplicates
    (an empty list or null: none)."""
    items = data.pop("clusters", None)
    if isinstance(items, EnvText):
        raise ConfigError("clusters: set a cluster's keys as RM__CLUSTERS__<index or name>__<section>__<key>")
    if items is None:
        return []
    if not isinstance(items, list):
        raise ConfigError("clusters: expected a list of clusters, each a mapping with name, kafka and groups")
    seen: dict[str, str] = {}
    for i, item in enumerate(items):
        where = f"clusters[{i}]"
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: expected a mapping with name, kafka and groups")
        for k in item:
            if k not in ITEM_KEYS:
                raise ConfigError(f"{where}.{k}: unknown key; allowed keys here: {', '.join(ITEM_KEYS)}")
        name = item.get("name")
        if not isinstance(name, str) or not NAME_RE.fullmatch(name):
            raise ConfigError(f"{where}.name: required, letters, digits, '.', '_' and '-' (starting with a letter or "
                              f"digit, at most 100 characters); got {name!r}")
        if name.lower() in seen:
            raise ConfigError(f"{where}.name: {name!r} is already the name of another cluster "
                              f"({seen[name.lower()]!r}; names may not differ only in case)")
        seen[name.lower()] = name
        for section in ("kafka", "groups"):
            if item.get(section) is not None and not isinstance(item[section], dict):
                raise ConfigError(f"{where}.{section}: expected a mapping of keys")
    return items


def env_override(data: dict, parts: list[str], value: EnvText) -> bool:
    """Apply `RM__CLUSTERS__<selector>__...` (`parts`, lower-cased, after `clusters`) to the tree's `clusters`.
    False when `parts` do not name a cluster's key."""
    if len(parts) < 2:
        return False
    items = data.get("clusters")
    if items is None:
        items = data["clusters"] = []
    if not isinstance(items, list):
        raise ConfigError("clusters: expected a list of clusters")
    selector, rest = parts[0], parts[1:]
    index = _select(items, selector)
    if index == len(items):
        items.append({})
    node = items[index]
    for part in rest[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = node[part] = {}
        node = nxt
    node[rest[-1]] = str(value) if rest == ["name"] else value
    return True


def _select(items: list, selector: str) -> int:
    if selector.isdigit():
        index = int(selector)
        if index > len(items):
            raise ConfigError(f"RM__CLUSTERS__{selector.upper()}: there are {len(items)} clusters (index 0 to "
                              f"{len(items) - 1}; {len(items)} adds one)")
        return index
    wanted = _env_form(selector)
    found = [i for i, item in enumerate(items) if isinstance(item, dict) and _env_form(str(item.get("name"))) == wanted]
    if len(found) != 1:
        names = ", ".join(str(item.get("name")) for item in items if isinstance(item, dict)) or "none"
        what = "no cluster" if not found else "more than one cluster"
        raise ConfigError(f"RM__CLUSTERS__{selector.upper()}: {what} is named so (ignoring case, '_' for '-' or '.'); "
                          f"clusters: {names}")
    return found[0]


def _env_form(name: str) -> str:
    return re.sub(r"[-.]", "_", name).lower()


def item_tree(top: dict, item: dict) -> dict:
    """The whole configuration tree of one cluster: the top level's, with the item's `kafka` and `groups` keys
    over it and the item's name as `kafka.cluster_name`."""
    tree = {k: (dict(v) if isinstance(v, dict) else v) for k, v in top.items()}
    for section in ("kafka", "groups"):
        merged = _merge(tree.get(section) or {}, item.get(section) or {})
        tree[section] = merged
    tree["kafka"]["cluster_name"] = item["name"]
    return tree


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def own_paths(cfg, default_name: str):
    """`cfg` (one cluster's) with its checkpoint, history and dead-letter paths under `clusters/<name>`, unless it
    is the cluster named `default_name` (the top level's `kafka.cluster_name`), which keeps the top level's."""
    from dataclasses import replace

    name = cfg.kafka.cluster_name
    if name == default_name:
        return cfg

    def nested(path):
        return join(path, CLUSTERS_DIR, name) if path else path

    sinks = cfg.sinks
    return replace(
        cfg, state=replace(cfg.state, checkpoint_location=nested(cfg.state.checkpoint_location)),
        sinks=replace(sinks, history=replace(sinks.history, parquet_path=nested(sinks.history.parquet_path)),
                      dead_letter=replace(sinks.dead_letter, path=nested(sinks.dead_letter.path))))


def prefixed(where: str, exc: ConfigError) -> ConfigError:
    """A cluster's configuration error, named by the item it came from."""
    return ConfigError(f"{where}: {exc}")
