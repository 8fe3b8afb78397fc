"""Parse exposition text into {(sample name, ((label, value), ...)): value} with prometheus_client's parser."""
from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families


def parse(text: str) -> dict:
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, f"duplicate sample {key}"
            out[key] = s.value
    return out


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


# Every group's series carries its type (catalogue.GROUP_KEY), every series its Kafka cluster (CLUSTER_LABEL): a
# test that does not name one matches any value of it.
GROUP_TYPE = "group_type"
KAFKA_CLUSTER = "kafka_cluster"
_OPTIONAL = (GROUP_TYPE, KAFKA_CLUSTER)


def _without(lbl: tuple, named=()) -> tuple:
    return tuple(kv for kv in lbl if kv[0] not in _OPTIONAL or kv[0] in named)


def value(samples: dict, name: str, **labels):
    """The value of the sample with exactly these labels (with ``group_type`` or ``kafka_cluster`` not given: of any
    group type or cluster; two samples differing only by them are an error)."""
    want = tuple(sorted((k, str(v)) for k, v in labels.items()))
    if all(k in labels for k in _OPTIONAL):
        return samples.get((name, want))
    found = [v for (n, lbl), v in samples.items() if n == name and _without(lbl, labels) == want]
    assert len(found) <= 1, f"{name}{dict(want)}: {len(found)} samples of different group types or clusters"
    return found[0] if found else None


def series(samples: dict, name: str, *, with_type: bool = False) -> dict:
    """{labels tuple: value} of one sample name; the ``group_type`` and ``kafka_cluster`` labels left out unless
    ``with_type``."""
    out = {}
    for (n, lbl), v in samples.items():
        if n == name:
            key = lbl if with_type else _without(lbl)
            assert key not in out, f"{name}{dict(key)}: samples of different group types or clusters"
            out[key] = v
    return out
