"""Whose history `rebalance-monitor history` reads, and where: one Kafka cluster's (`--cluster NAME`, its name
exactly as configured) or every cluster's it can find.

Each cluster's job writes its own history (config_clusters.py): the configuration's default cluster (the top
level's `kafka.cluster_name`) to `sinks.history.parquet_path` itself, any other to `<parquet_path>/clusters/<name>`;
each to the history topic `sinks.history.kafka_topic` on its own Kafka. So:

- Parquet: the default's directory and every `clusters/<name>` folder found there (a cluster no longer
  configured keeps its history and is still read); `--cluster NAME` reads the one directory of NAME.
- Kafka: the history topic of each configured cluster, on that cluster's Kafka (a cluster not configured has no
  known Kafka); `--cluster NAME` reads the one of NAME.

A record's cluster is its `kafka_cluster` field (cluster_stamp.py); a record without it, written before the field
existed, is the cluster's whose sink holds it: in a single-cluster history, the default's. `--cluster NAME` keeps
the records of NAME only, and names no cluster that is neither configured nor found in the history
(`UnknownCluster`)."""
from __future__ import annotations

from typing import Iterable, Iterator

from ..cluster_stamp import FIELD
from ..files import join
from .reader import CLUSTERS_DIR, Query, hadoop_settings, nested_clusters, read_kafka, read_parquet


class UnknownCluster(LookupError):
    """`--cluster` names a cluster that is neither configured nor in the history."""

    def __init__(self, name: str, known: Iterable[str]):
        names = ", ".join(sorted(set(known))) or "none"
        super().__init__(f"no cluster {name!r} in the configuration or the history (clusters: {names}; "
                         "a name is matched exactly, case included)")


def configured(cfg) -> dict:
    """{name: that cluster's configuration} of every cluster the configuration watches, in its order: those of
    its `clusters:` list (`MonitorConfig.cluster_configs`), else the one."""
    return {one.kafka.cluster_name: one for one in cfg.cluster_configs()}


def cluster_dir(base: str, name: str, default: str) -> str:
    """The history directory of cluster `name` under the default's `base`."""
    return base if name == default else join(base, CLUSTERS_DIR, name)


def parquet_sources(cfg, cluster: str | None) -> list[tuple[str, str]]:
    """(cluster, its history directory) to read: `cluster`'s, or every one found."""
    base = cfg.sinks.history.parquet_path
    if not base:
        raise FileNotFoundError("sinks.history.parquet_path is not set in the configuration")
    default = cfg.kafka.cluster_name
    found = nested_clusters(base, hadoop_settings(cfg.spark.conf))  # (no such directory: "no history at ...")
    names = [default] + [n for n in found if n != default]
    if cluster is None:
        return [(n, cluster_dir(base, n, default)) for n in names]
    if cluster in names:
        return [(cluster, cluster_dir(base, cluster, default))]
    if cluster in configured(cfg):
        raise FileNotFoundError(f"no history of cluster {cluster!r} at {cluster_dir(base, cluster, default)!r} yet")
    raise UnknownCluster(cluster, [*names, *configured(cfg)])


def kafka_sources(cfg, cluster: str | None) -> list[tuple[str, object, str]]:
    """(cluster, its Kafka connection, its history topic) to read: `cluster`'s, or every configured one's."""
    clusters = configured(cfg)
    if cluster is not None and cluster not in clusters:
        raise UnknownCluster(cluster, clusters)
    out = []
    for name, one in clusters.items():
        if cluster in (None, name) and one.sinks.history.kafka_topic:
            out.append((name, one.kafka.connection(), one.sinks.history.kafka_topic))
    if not out:
        raise FileNotFoundError("sinks.history.kafka_topic is not set in the configuration")
    return out


def of_cluster(records: Iterable[dict], sink_cluster: str, cluster: str | None) -> Iterator[dict]:
    """`records` read from `sink_cluster`'s sink, each with its cluster (its own `kafka_cluster`, else
    `sink_cluster`), those of `cluster` only when given."""
    for r in records:
        if r.setdefault(FIELD, sink_cluster) == cluster or cluster is None:
            yield r


def read_history(cfg, source: str, q: Query, cluster: str | None) -> list[dict]:
    """The records `q` asks for, of `cluster` (None: every cluster's), from the Parquet directories or the Kafka
    topics (`source`), in time order."""
    out: list[dict] = []
    if source == "parquet":
        hadoop = hadoop_settings(cfg.spark.conf)
        for name, path in parquet_sources(cfg, cluster):
            out.extend(of_cluster(read_parquet(path, q, hadoop), name, cluster))
    else:
        for name, connection, topic in kafka_sources(cfg, cluster):
            out.extend(of_cluster(read_kafka(connection, topic, q), name, cluster))
    out.sort(key=lambda r: r.get("ts") or 0)
    return out
