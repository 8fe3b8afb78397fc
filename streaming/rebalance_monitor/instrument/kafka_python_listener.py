"""The rebalance listener kafka-python calls: a tap that emits `revoked` / `lost` through the
instrumentation's callback (kafka_python.py passes its own), then calls the user's own listener (sync or async)."""
from __future__ import annotations

import inspect
from collections.abc import Callable


def _make_listener_base():
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    return ConsumerRebalanceListener


class ListenerTap(_make_listener_base()):
    """Emits `revoked` / `lost`, then delegates to the user's listener (sync or async)."""

    def __init__(self, on_partitions: Callable[[str, object], None], inner):
        self._on_partitions = on_partitions
        self._inner = inner
        for method in ("on_partitions_revoked", "on_partitions_assigned", "on_partitions_lost"):
            target = getattr(inner, method, None) if inner is not None else None
            if method == "on_partitions_lost" and target is None and inner is not None:
                target = getattr(inner, "on_partitions_revoked", None)
            setattr(self, method, self._wrap(method, target))

    def _wrap(self, method, target):
        on_partitions = self._on_partitions
        etype = {"on_partitions_revoked": "revoked", "on_partitions_lost": "lost"}.get(method)

        def before(partitions):
            if etype:
                on_partitions(etype, partitions)

        if target is not None and inspect.iscoroutinefunction(target):
            async def async_hook(partitions):
                before(partitions)
                await target(partitions)
            return async_hook

        def hook(partitions):
            before(partitions)
            if target is not None:
                target(partitions)
        return hook

    # the abstract methods are replaced per instance in __init__
    def on_partitions_revoked(self, revoked):  # pragma: no cover
        pass

    def on_partitions_assigned(self, assigned):  # pragma: no cover
        pass
