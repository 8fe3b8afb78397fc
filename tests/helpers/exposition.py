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


def value(samples: dict, name: str, **labels):
    return samples.get((name, tuple(sorted((k, str(v)) for k, v in labels.items()))))


def series(samples: dict, name: str) -> dict:
    """{labels tuple: value} of one sample name."""
    return {lbl: v for (n, lbl), v in samples.items() if n == name}
