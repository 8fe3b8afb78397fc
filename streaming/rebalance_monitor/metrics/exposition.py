"""The Prometheus text exposition (format 0.0.4): label escaping, value formatting, family headers, sample lines
written through a family's :class:`~rebalance_monitor.metrics.catalogue.MetricSpec`, and the cumulative histogram.

Pure text, shared by the renderers (``render.py``, ``lag_levels.py``, ``health.py``). A line never spells a
metric name or a label: :class:`Family` takes both from the spec, in the spec's label order.
"""
from __future__ import annotations

import math
from collections.abc import Mapping

from .catalogue import CLUSTER_LABEL, DEFAULT_CLUSTER, GROUP_KEY, GROUP_LABEL, GROUP_TYPE_LABEL, MetricSpec


def escape_label(value) -> str:
    if type(value) is int:
        return str(value)
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


def cluster_label(cluster: str = DEFAULT_CLUSTER) -> str:
    """``kafka_cluster="<name>"``: the first label of every family (the catalogue's ``CLUSTER_LABEL``), the name
    written as given (escaped), once per store."""
    return f'{CLUSTER_LABEL}="{escape_label(cluster)}"'


def group_label(group: str, group_type: str = "unknown", cluster: str = DEFAULT_CLUSTER) -> str:
    """``kafka_cluster="<cluster>",group="<name>",group_type="<type>"``: the first labels of every family of a group
    (the catalogue's ``GROUP_KEY``), written once per group and reused."""
    return (f'{cluster_label(cluster)},{GROUP_LABEL}="{escape_label(group)}",'
            f'{GROUP_TYPE_LABEL}="{escape_label(group_type)}"')


class Family:
    """Writes the sample lines of one family: ``name{label="value",...} value``, with the spec's name and labels.

    Label values are escaped; ``fixed`` is label text already written (a group's :func:`group_label`, else the
    cluster's :func:`cluster_label`) standing for the spec's first labels (a group's family: the catalogue's
    ``GROUP_KEY``; else the first, the cluster). Values are formatted with :func:`fmt_value`. The renderers write
    hundreds of thousands of lines: the text between the values is made once from the spec (:meth:`pieces`).
    """

    __slots__ = ("spec", "name", "_open", "_pieces", "_pieces_after_fixed")

    def __init__(self, spec: MetricSpec) -> None:
        self.spec = spec
        self.name = spec.name
        self._open = spec.name + "{"
        labels = spec.labels
        n = len(GROUP_KEY) if spec.group_scoped else 1     # the labels `fixed` text stands for (every family has)
        self._pieces = tuple([f'{{{labels[0]}="'] + [f'",{label}="' for label in labels[1:]] + ['"} '])
        after = [f',{labels[n]}="'] + [f'",{label}="' for label in labels[n + 1:]] if len(labels) > n else []
        self._pieces_after_fixed = tuple(["{", *after, '"} ' if after else "} "])

    def pieces(self, fixed: bool) -> tuple[str, ...]:
        """The text around the label values of a line, from ``{`` to ``} ``: one more piece than values. With
        ``fixed`` the first value is label text already written (it stands for the first labels)."""
        return self._pieces_after_fixed if fixed else self._pieces

    def only_fixed(self, fixed: str, value) -> str:
        """The line of a family whose only labels are the fixed ones (a group's, or the cluster's)."""
        return f"{self._open}{fixed}}} {value if type(value) is int else fmt_value(value)}\n"

    def after_fixed(self, values: tuple) -> str:
        """The labels after the fixed ones (given as text): ``,label="value",...} `` (a renderer may cache it)."""
        pieces = self._pieces_after_fixed
        if len(values) == 1:
            return f"{pieces[1]}{escape_label(values[0])}{pieces[2]}"
        return "".join([x for pair in zip(pieces[1:], map(escape_label, values)) for x in pair]) + pieces[-1]

    def line(self, fixed: str, values: tuple, value) -> str:
        """A group's line: ``fixed`` stands for the first labels, ``values`` are the next ones."""
        return f"{self._open}{fixed}{self.after_fixed(values)}{value if type(value) is int else fmt_value(value)}\n"

    def by_label(self, fixed: str, counts: Mapping) -> str:
        """The lines of a family with one label after the fixed ones, from ``{label value: value}``, sorted by label
        value."""
        head, tail = f"{self._open}{fixed}{self._pieces_after_fixed[1]}", self._pieces_after_fixed[2]
        return "".join(f'{head}{escape_label(k)}{tail}{counts[k]}\n' for k in sorted(counts))


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
