"""Several Kafka clusters' series as one exposition: :class:`FleetMetrics`.

A run that watches several clusters keeps a :class:`~rebalance_monitor.metrics.updater.MetricsUpdater` per cluster
(each fed by its own query, lag poller and broker poller; every line of it under ``kafka_cluster="<its name>"``)
and serves them on one ``/metrics``. Prometheus' text format wants each family's ``# HELP``/``# TYPE`` once, its
samples after it: so the clusters' lines are merged family by family, in catalogue order, from the families' lines
each store keeps apart (``body.BodyText.parts``, ``health.JobHealth.parts``): a join, no parsing.

:class:`FleetMetrics` offers what :class:`~rebalance_monitor.metrics.exporter.MetricsExporter` asks of an updater
(``render``, ``render_bytes``, ``readiness``, ``is_ready``, ``set_up``). The merged groups' part is cached (text,
bytes, gzip) until a cluster's changes; the self metrics are merged at each scrape, as a store writes its own. With
one cluster there is nothing to merge: :func:`exposition_of` gives its updater itself.

Ready while at least one cluster is ready (a cluster down does not stop the others' metrics from being scraped;
``rebalance_monitor_kafka_cluster_up`` and each cluster's ``rebalance_monitor_ready`` say which); ``/ready``'s body
gives each cluster's readiness and reason on a line of its own.
"""
from __future__ import annotations

import gzip
import threading
from collections.abc import Mapping

from . import body, health
from .updater import MetricsUpdater


class FleetMetrics:
    """The clusters' updaters, ``{cluster name: updater}`` in the order their lines are written within a family
    (each updater's ``cluster`` is its name)."""

    def __init__(self, updaters: Mapping[str, MetricsUpdater]) -> None:
        if not updaters:
            raise ValueError("a fleet has at least one Kafka cluster")
        for name, u in updaters.items():
            if u.cluster != name:
                raise ValueError(f"the updater of Kafka cluster {name!r} writes kafka_cluster {u.cluster!r}")
        self.updaters: dict[str, MetricsUpdater] = dict(updaters)
        self._lock = threading.Lock()
        self._bodies: tuple[body.BodyText, ...] = ()   # the clusters' bodies the merged one was made of
        self._merged: body.BodyText | None = None

    # ---- exposition --------------------------------------------------------------------------------------------
    def _parts(self) -> tuple[body.BodyText, str]:
        """The merged body (cached while no cluster's changed) and the merged self metrics."""
        taken = [u.parts() for u in self.updaters.values()]
        bodies = tuple(b for b, _ in taken)
        with self._lock:
            if self._merged is None or len(bodies) != len(self._bodies) or \
                    any(a is not b for a, b in zip(bodies, self._bodies)):
                self._merged = body.BodyText([[frag for b in bodies for frag in b.parts[i]]
                                              for i in range(len(body.FAMILIES))])
                self._bodies = bodies
            merged = self._merged
        tail = []
        for i, head in enumerate(health.HEADERS):
            tail.append(head)
            tail.extend(h[i] for _, h in taken)
        return merged, "".join(tail)

    def render(self) -> str:
        """The whole text exposition (format 0.0.4): every family once, its clusters' lines after its header."""
        merged, tail = self._parts()
        return merged.text + tail

    def render_bytes(self, gzip_ok: bool = False) -> tuple[bytes, str | None]:
        """As ``MetricsStore.render_bytes``: ``(body, content_encoding)``; gzip as two members (the groups', cached,
        then the self metrics')."""
        merged, tail = self._parts()
        if not gzip_ok:
            return merged.as_bytes() + tail.encode("utf-8"), None
        return merged.as_gzip() + gzip.compress(tail.encode("utf-8"), compresslevel=1), "gzip"

    # ---- health ------------------------------------------------------------------------------------------------
    def set_up(self, up: bool) -> None:
        for u in self.updaters.values():
            u.set_up(up)

    def readiness(self) -> tuple[bool, str]:
        """(ready, why): ready while at least one cluster is; ``why`` has a line per cluster,
        ``<name>: ready`` or ``<name>: not ready: <reason>`` (after ``no Kafka cluster is ready`` when none is)."""
        ready, lines = False, []
        for name, u in self.updaters.items():
            ok, why = u.readiness()
            ready = ready or ok
            lines.append(f"{name}: ready" if ok else f"{name}: not ready: {why}")
        if not ready:
            lines.insert(0, "no Kafka cluster is ready")
        return ready, "\n".join(lines)

    def is_ready(self) -> bool:
        return self.readiness()[0]


def exposition_of(updaters: Mapping[str, MetricsUpdater]) -> MetricsUpdater | FleetMetrics:
    """What the exporter serves for ``{cluster name: updater}``: the updater itself when there is one (nothing to
    merge, no cost added), else their :class:`FleetMetrics`."""
    if len(updaters) != 1:
        return FleetMetrics(updaters)
    (name, u), = updaters.items()
    if u.cluster != name:
        raise ValueError(f"the updater of Kafka cluster {name!r} writes kafka_cluster {u.cluster!r}")
    return u
