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


# Every group's series carries its type (catalogue.GROUP_KEY); a test that does not name it matches any type.
GROUP_TYPE = "group_type"


def _without_type(lbl: tuple) -> tuple:
    return tuple(kv for kv in lbl if kv[0] != GROUP_TYPE)


def value(samples: dict, name: str, **labels):
    """The value of the sample with exactly these labels (with ``group_type`` not given: of any group type; two
    samples differing only by it are an error)."""
    want = tuple(sorted((k, str(v)) for k, v in labels.items()))
    if GROUP_TYPE in labels:
        return samples.get((name, want))
    found = [v for (n, lbl), v in samples.items() if n == name and _without_type(lbl) == want]
    assert len(found) <= 1, f"{name}{dict(want)}: {len(found)} samples of different group types"
    return found[0] if found else None


def series(samples: dict, name: str, *, with_type: bool = False) -> dict:
    """{labels tuple: value} of one sample name; the ``group_type`` label left out unless ``with_type``."""
    out = {}
    for (n, lbl), v in samples.items():
        if n == name:
            key = lbl if with_type else _without_type(lbl)
            assert key not in out, f"{name}{dict(key)}: samples of different group types"
            out[key] = v
    return out
