"""Several clusters in one configuration (config_clusters.py): each cluster's whole configuration, its paths, its
environment overrides, and the start-up errors that name the key."""
from __future__ import annotations

import pytest
import yaml

from rebalance_monitor.config import ConfigError, load_config

TWO = {"kafka": {"events_topic": "events", "offsets_topic": "__consumer_offsets",
                 "security": {"ssl_check_hostname": False}},
       "groups": {"deny": "console-.*", "max_groups": 100},
       "clusters": [
           {"name": "default", "kafka": {"bootstrap_servers": "127.0.0.1:9092"}},
           {"name": "MyCluster-1.prod", "kafka": {"bootstrap_servers": "127.0.0.1:9093", "broker_release": "3.9.2",
                                                  "security": {"protocol": "SSL"}},
            "groups": {"allow": "orders.*"}}]}


def _load(tmp_path, tree, env=None):
    path = tmp_path / "monitor.yaml"
    path.write_text(yaml.safe_dump(tree))
    return load_config(path, env=env or {})


def test_without_a_list_the_configuration_is_one_cluster_named_default():
    cfg = load_config(env={})
    assert cfg.cluster_configs() == (cfg,)
    assert cfg.kafka.cluster_name == "default"


def test_each_cluster_takes_the_top_level_and_its_own_keys(tmp_path):
    cfg = _load(tmp_path, TWO)
    a, b = cfg.cluster_configs()
    assert [a.kafka.cluster_name, b.kafka.cluster_name] == ["default", "MyCluster-1.prod"]   # kept exactly
    assert a.kafka.bootstrap_servers == "127.0.0.1:9092" and b.kafka.bootstrap_servers == "127.0.0.1:9093"
    # the top level's keys, where the item sets none; a nested section merged key by key
    assert a.kafka.offsets_topic == b.kafka.offsets_topic == "__consumer_offsets"
    assert b.kafka.security.protocol == "SSL" and b.kafka.security.ssl_check_hostname is False
    assert a.kafka.security.protocol == "PLAINTEXT"
    assert (a.kafka.broker_release, b.kafka.broker_release) == ("auto", "3.9.2")
    assert (a.groups.allow, b.groups.allow) == (None, "orders.*")
    assert a.groups.deny == b.groups.deny == "console-.*" and b.groups.max_groups == 100
    assert a.clusters == b.clusters == ()


def test_the_default_named_cluster_keeps_the_single_cluster_paths_the_others_nest(tmp_path):
    tree = dict(TWO, state={"checkpoint_location": "s3a://bucket/ckpt"},
                sinks={"history": {"parquet_path": "var/h"}, "dead_letter": {"path": None}})
    a, b = _load(tmp_path, tree).cluster_configs()
    assert a.state.checkpoint_location == "s3a://bucket/ckpt" and a.sinks.history.parquet_path == "var/h"
    assert b.state.checkpoint_location == "s3a://bucket/ckpt/clusters/MyCluster-1.prod"
    assert b.sinks.history.parquet_path == "var/h/clusters/MyCluster-1.prod"
    assert b.sinks.dead_letter.path is None
    # a deployment whose single cluster had a name keeps its paths for the item of that name
    renamed = dict(TWO, kafka=dict(TWO["kafka"], cluster_name="MyCluster-1.prod"))
    a, b = _load(tmp_path, renamed).cluster_configs()
    assert a.state.checkpoint_location == "var/checkpoint/clusters/default"
    assert b.state.checkpoint_location == "var/checkpoint"


def test_environment_overrides_reach_a_cluster_by_index_or_by_name(tmp_path):
    env = {"RM__CLUSTERS__1__KAFKA__BOOTSTRAP_SERVERS": "127.0.0.1:9999",
           "RM__CLUSTERS__MYCLUSTER_1_PROD__GROUPS__MAX_GROUPS": "7",
           "RM__CLUSTERS__DEFAULT__KAFKA__EVENTS_TOPIC": "2024"}
    a, b = _load(tmp_path, TWO, env).cluster_configs()
    assert b.kafka.bootstrap_servers == "127.0.0.1:9999" and b.groups.max_groups == 7
    assert a.kafka.events_topic == "2024" and b.kafka.events_topic == "events"
    # a new cluster by the next index
    env = {"RM__CLUSTERS__2__NAME": "third", "RM__CLUSTERS__2__KAFKA__BOOTSTRAP_SERVERS": "127.0.0.1:9094"}
    names = [c.kafka.cluster_name for c in _load(tmp_path, TWO, env).cluster_configs()]
    assert names == ["default", "MyCluster-1.prod", "third"]


@pytest.mark.parametrize("clusters,message", [
    ([{"name": "a"}, {"name": "a"}], "clusters[1].name: 'a' is already the name of another cluster"),
    ([{"name": "Prod"}, {"name": "prod"}], "names may not differ only in case"),
    ([{"name": "a/b"}], "clusters[0].name: required, letters, digits"),
    ([{"name": ""}], "clusters[0].name: required"),
    ([{"kafka": {}}], "clusters[0].name: required"),
    ([{"name": "a", "lag": {}}], "clusters[0].lag: unknown key; allowed keys here: name, kafka, groups"),
    ([{"name": "a", "kafka": "x:1"}], "clusters[0].kafka: expected a mapping of keys"),
    ([{"name": "a", "kafka": {"events_topic": "", "offsets_topic": None}}],
     "clusters[0] (a): kafka.events_topic: at least one input is required"),
    ([{"name": "a", "kafka": {"bootstrap_servers": "nohost"}}], "clusters[0] (a): kafka.bootstrap_servers: expected"),
    ([{"name": "a", "kafka": {"security": {"protocol": "SASL_SSL"}}}],
     "clusters[0] (a): kafka.security.sasl_mechanism: required"),
    ([{"name": "a", "groups": {"allow": "(["}}], "clusters[0] (a): groups.allow: not a valid regular expression"),
    ({"name": "a"}, "clusters: expected a list of clusters"),
])
def test_bad_clusters_fail_at_start_naming_the_key(tmp_path, clusters, message):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, {"clusters": clusters})
    assert message in str(err.value)


def test_an_environment_override_naming_no_cluster_fails_naming_the_clusters(tmp_path):
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, TWO, {"RM__CLUSTERS__PROD_US__KAFKA__BOOTSTRAP_SERVERS": "x:1"})
    assert "RM__CLUSTERS__PROD_US: no cluster is named so" in str(err.value)
    assert "clusters: default, MyCluster-1.prod" in str(err.value)
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, TWO, {"RM__CLUSTERS__5__KAFKA__BOOTSTRAP_SERVERS": "x:1"})
    assert "there are 2 clusters" in str(err.value)
