"""The text format's pieces: a family's lines are written from its spec, with escaped label values."""
from __future__ import annotations

import math

from rebalance_monitor.metrics.catalogue import END_OFFSET, EVENTS_READ, GENERATION, LAG, MEMBER_TIMEOUTS, STATE, UP
from rebalance_monitor.metrics.exposition import (Family, Histogram, cluster_label, escape_label, fmt_value,
                                                  group_label)

G = group_label('a"b\\c\nd', "share")
C = cluster_label("MyCluster-1.prod")


def test_escaping_and_values():
    assert G == 'kafka_cluster="default",group="a\\"b\\\\c\\nd",group_type="share"'
    assert group_label("g") == 'kafka_cluster="default",group="g",group_type="unknown"'
    # a cluster's name is written exactly as given (upper case, dots, dashes), escaped
    assert group_label("g", "consumer", "MyCluster-1.prod") == \
        'kafka_cluster="MyCluster-1.prod",group="g",group_type="consumer"'
    assert C == 'kafka_cluster="MyCluster-1.prod"' and cluster_label() == 'kafka_cluster="default"'
    assert cluster_label('a"b\\c\nd') == 'kafka_cluster="a\\"b\\\\c\\nd"'
    assert escape_label(7) == "7" and escape_label(None) == "None"
    assert [fmt_value(v) for v in (True, 3, 2.0, 0.25, math.inf, -math.inf, math.nan)] == \
        ["1", "3", "2.0", "0.25", "+Inf", "-Inf", "NaN"]


def test_lines_take_the_name_and_labels_from_the_spec():
    assert Family(UP).only_fixed(C, 1) == 'rebalance_monitor_up{kafka_cluster="MyCluster-1.prod"} 1\n'
    assert Family(GENERATION).only_fixed(G, 12) == f"kafka_consumergroup_generation{{{G}}} 12\n"
    assert Family(STATE).line(G, ("Stable",), 1) == f'kafka_consumergroup_state{{{G},state="Stable"}} 1\n'
    assert Family(MEMBER_TIMEOUTS).line(G, ("poll", 'c"1', ""), 2) == \
        f'kafka_consumergroup_member_timeouts_total{{{G},timeout="poll",client_id="c\\"1",host=""}} 2\n'
    assert Family(EVENTS_READ).by_label(C, {"b": 2, "a": 1}) == \
        ('rebalance_monitor_events_read_total{kafka_cluster="MyCluster-1.prod",source="a"} 1\n'
         'rebalance_monitor_events_read_total{kafka_cluster="MyCluster-1.prod",source="b"} 2\n')
    assert Family(LAG).pieces(fixed=True) == ("{", ',topic="', '",partition="', '"} ')
    assert Family(END_OFFSET).pieces(fixed=True) == ("{", ',topic="', '",partition="', '"} ')
    assert Family(END_OFFSET).pieces(fixed=False) == ('{kafka_cluster="', '",topic="', '",partition="', '"} ')
    assert Family(GENERATION).pieces(fixed=True) == ("{", "} ")


def test_histogram_lines_and_state():
    h = Histogram((0.5, 1.0))
    for v in (0.2, 0.7, 3.0):
        h.observe(v)
    assert "".join(h.lines("x", "")) == ('x_bucket{le="0.5"} 1\nx_bucket{le="1.0"} 2\nx_bucket{le="+Inf"} 3\n'
                                         "x_count 3\nx_sum 3.9\n")
    assert h.lines("x", G)[0] == f'x_bucket{{{G},le="0.5"}} 1\n'
    other = Histogram((0.5, 1.0))
    assert other.load_state(h.to_state()) and other.lines("x", "") == h.lines("x", "")
    assert not Histogram((1.0,)).load_state(h.to_state())
