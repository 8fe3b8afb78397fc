"""The Prometheus text exposition (format 0.0.4): label escaping, value formatting, family headers and the
cumulative histogram, shared by the exporter's renderers (``updater.py``, ``lag_levels.py``)."""
from __future__ import annotations

import math

from .catalogue import MetricSpec


def escape_label(value) -> str:
    s = str(value)
    if "\\" in s or '"' in s or "\n" in s:
        s = s.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')
    return s


def fmt_value(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, int):
        return str(v)
    if v != v:
        return "NaN"
    if v == math.inf:
        return "+Inf"
    if v == -math.inf:
        return "-Inf"
    if v == int(v) and abs(v) < 1e15:
        return f"{int(v)}.0"
    return repr(float(v))


def fmt_le(b: float) -> str:
    if b == math.inf:
        return "+Inf"
    return repr(float(b))


def labels_text(pairs) -> str:
    """``{a="x",b="y"}`` (empty string when no labels)."""
    if not pairs:
        return ""
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in pairs) + "}"


def header(spec: MetricSpec) -> str:
    help_ = spec.help.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {spec.name} {help_}\n# TYPE {spec.name} {spec.prom_type}\n"


def labelled(name: str, label: str, d: dict) -> str:
    return "".join(f'{name}{{{label}="{escape_label(k)}"}} {d[k]}\n' for k in sorted(d))


class Histogram:
    """Cumulative-bucket histogram state."""

    __slots__ = ("bounds", "counts", "sum", "count")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * len(bounds)
        self.sum = 0.0
        self.count = 0

    def observe(self, v: float) -> None:
        for i, b in enumerate(self.bounds):
            if v <= b:
                self.counts[i] += 1
                break
        self.sum += v
        self.count += 1

    def lines(self, name: str, label_prefix: str) -> list[str]:
        """``label_prefix`` is the text inside the braces before ``le`` (may be empty)."""
        out = []
        sep = "," if label_prefix else ""
        acc = 0
        for b, c in zip(self.bounds, self.counts):
            acc += c
            out.append(f'{name}_bucket{{{label_prefix}{sep}le="{fmt_le(b)}"}} {acc}\n')
        out.append(f'{name}_bucket{{{label_prefix}{sep}le="+Inf"}} {self.count}\n')
        lbl = "{" + label_prefix + "}" if label_prefix else ""
        out.append(f"{name}_count{lbl} {self.count}\n")
        out.append(f"{name}_sum{lbl} {fmt_value(self.sum)}\n")
        return out

    def to_state(self) -> list:
        return [self.counts, self.sum, self.count]

    def load_state(self, state) -> bool:
        """Restore :meth:`to_state`; False (and nothing changed) when the bucket layout differs."""
        counts, sum_, count = state
        if len(counts) != len(self.bounds):
            return False
        self.counts, self.sum, self.count = [int(c) for c in counts], float(sum_), int(count)
        return True
