"""The Prometheus text exposition (format 0.0.4): label escaping, value formatting, family headers, sample lines
written through a family's :class:`~rebalance_monitor.metrics.catalogue.MetricSpec`, and the cumulative histogram.

Pure text, shared by the renderers (``render.py``, ``lag_levels.py``, ``health.py``). A line never spells a
metric name or a label: :class:`Family` takes both from the spec, in the spec's label order.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from .catalogue import GROUP_LABEL, MetricSpec


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


def header(spec: MetricSpec) -> str:
    help_ = spec.help.replace("\\", "\\\\").replace("\n", "\\n")
    return f"# HELP {spec.name} {help_}\n# TYPE {spec.name} {spec.prom_type}\n"


def group_label(group: str) -> str:
    """``group="<name>"``: the first label of every family of a group, written once per group and reused."""
    return f'{GROUP_LABEL}="{escape_label(group)}"'


class Family:
    """Writes the sample lines of one family: ``name{label="value",...} value``, with the spec's name and labels.

    Label values are escaped; ``fixed`` is label text already written (a group's :func:`group_label`) standing
    for the spec's first label. Values are formatted with :func:`fmt_value` unless already text.
    """

    __slots__ = ("spec", "name", "_keys", "_open")

    def __init__(self, spec: MetricSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self._open = spec.name + "{"
        self._keys = tuple(f'{label}="' for label in spec.labels)

    def plain(self, value) -> str:
        """The line of a family without labels."""
        return f"{self.name} {fmt_value(value)}\n"

    def of_group(self, fixed: str, value) -> str:
        """The line of a group's family whose only label is the group."""
        return f"{self._open}{fixed}}} {fmt_value(value)}\n"

    def line(self, fixed: str, values: Iterable, value) -> str:
        """A line with ``fixed`` for the first label (empty: none fixed) and ``values`` for the next ones."""
        keys = self._keys[1:] if fixed else self._keys
        pairs = [fixed] if fixed else []
        pairs.extend(f'{k}{escape_label(v)}"' for k, v in zip(keys, values))
        return f"{self._open}{','.join(pairs)}}} {fmt_value(value)}\n"

    def prefix(self, fixed: str, values: Iterable) -> str:
        """``{labels} ``: the labels of a line without the name and the value (cached by the lag renderer)."""
        keys = self._keys[1:] if fixed else self._keys
        pairs = [fixed] if fixed else []
        pairs.extend(f'{k}{escape_label(v)}"' for k, v in zip(keys, values))
        return f"{{{','.join(pairs)}}} "

    def by_label(self, counts: Mapping) -> str:
        """The lines of a one-label family from ``{label value: value}``, sorted by label value."""
        key, name = self._keys[0], self.name
        return "".join(f'{name}{{{key}{escape_label(k)}"}} {counts[k]}\n' for k in sorted(counts))


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
        """The ``_bucket``/``_count``/``_sum`` lines of family ``name`` (a spec's name); ``label_prefix`` is the text
        inside the braces before ``le`` (may be empty)."""
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
