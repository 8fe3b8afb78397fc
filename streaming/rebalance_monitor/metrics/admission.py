"""Which consumer groups get series: allow/deny, the cardinality cap, and the idle TTL.

* Groups that do not fully match ``group_allow``, or fully match ``group_deny``
  (:class:`~rebalance_monitor.core.group_filter.GroupFilter`, the rule every driver uses) are not exported.
* Once ``max_groups`` groups are tracked, further groups are not exported until room frees up.
* Each group left out is counted once, by reason (``rebalance_monitor_groups_dropped_total``); the names
  remembered for that are bounded (at least 10,000, or 4 x ``max_groups``) and kept in the snapshot. The groups
  left out by the cap are said in the log too, at once and then at most once a minute (``OverCapLog``): a
  monitor that watches fewer groups than the cluster has is a problem of its deployment, not of the groups.
* A group with no record for ``idle_group_ttl_s`` expires (the store drops its series), and so does an end
  offset not refreshed for as long.
"""
from __future__ import annotations

import json
import logging
import time
from collections import OrderedDict
from typing import Callable

from ..core.group_filter import GroupFilter

log = logging.getLogger("rebalance_monitor.metrics")

DENIED = "denied"
MAX_GROUPS = "max_groups"
DEFAULT_MAX_GROUPS = 10_000  # the exporter's cap when not configured (config.GroupsConfig has the same default)
_JSON_SEP = (",", ":")


class OverCapLog:
    """Says in the log which groups the cap left out: the first at once, then those of each minute together."""

    EVERY_S = 60.0
    NAMED = 5  # group names a line gives (the rest counted)

    def __init__(self, max_groups: int, clock: Callable[[], float] = time.time) -> None:
        self.max_groups = max_groups
        self.clock = clock
        self.names: list[str] = []  # the first NAMED of those not said yet
        self.count = 0              # all of them
        self.said_at: float | None = None

    def note(self, name: str) -> None:
        if len(self.names) < self.NAMED:
            self.names.append(name)
        self.count += 1
        now = self.clock()
        if self.said_at is None or now - self.said_at >= self.EVERY_S:
            self.say(now)

    def say(self, now: float) -> None:
        more = self.count - len(self.names)
        log.warning("groups.max_groups (%d) reached: %s %s not exported%s; raise groups.max_groups or narrow "
                    "groups.allow / groups.deny",
                    self.max_groups, "group" if self.count == 1 else "groups", ", ".join(self.names),
                    f" and {more} more" if more > 0 else "")
        self.names, self.count = [], 0
        self.said_at = now


class Admission:
    def __init__(self, max_groups: int, group_allow: str | None, group_deny: str | None,
                 idle_group_ttl_s: float, clock: Callable[[], float] = time.time) -> None:
        self.max_groups = max_groups
        self.over_cap_log = OverCapLog(max_groups, clock)
        self.group_filter = GroupFilter(group_allow, group_deny)
        self.idle_group_ttl_s = idle_group_ttl_s
        self.dropped: dict[str, int] = {MAX_GROUPS: 0, DENIED: 0}
        self.dropped_names: OrderedDict[str, str] = OrderedDict()
        self.dropped_cap = max(10_000, 4 * max_groups)
        self._names_json: str | None = None      # dropped_names as JSON (cache for the snapshot)
        self.next_expiry_ms = 0

    def keeps(self, name: str) -> bool:
        """``name`` passes allow/deny."""
        return self.group_filter.keeps(name)

    def has_room(self, tracked: int) -> bool:
        return tracked < self.max_groups

    def note_dropped(self, name: str, reason: str) -> None:
        """``name`` is not exported for ``reason``: counted unless it was already, for that reason."""
        if self.dropped_names.get(name) == reason:
            return
        self.dropped_names[name] = reason
        self._names_json = None
        self.dropped[reason] += 1
        if reason == MAX_GROUPS:
            self.over_cap_log.note(name)
        if len(self.dropped_names) > self.dropped_cap:
            self.dropped_names.popitem(last=False)

    def note_denied(self, name: str) -> None:
        self.note_dropped(name, DENIED)

    def note_over_cap(self, name: str) -> None:
        self.note_dropped(name, MAX_GROUPS)

    def admitted(self, name: str) -> None:
        """``name`` got series: if it comes to be dropped again, it counts again."""
        if self.dropped_names.pop(name, None) is not None:
            self._names_json = None

    # ---- expiry ------------------------------------------------------------------------------------------------
    def expiry_due(self, now_ms: int) -> bool:
        return now_ms >= self.next_expiry_ms

    def expired(self, groups: dict, now_ms: int) -> tuple[list[str], float]:
        """The groups of ``groups`` ({name: series}) idle for longer than the TTL, and the time before which an
        end offset not refreshed expires too; schedules the next check."""
        ttl_ms = self.idle_group_ttl_s * 1000
        self.next_expiry_ms = now_ms + min(ttl_ms, 60_000) / 4
        return [n for n, g in groups.items() if now_ms - g.last_activity_ms > ttl_ms], now_ms - ttl_ms

    # ---- the snapshot (persistence.py) ----------------------------------------------------------------------
    def names_json(self) -> str:
        if self._names_json is None:
            self._names_json = json.dumps(list(self.dropped_names.items()), separators=_JSON_SEP)
        return self._names_json

    def restore(self, dropped: dict[str, int], names: list[tuple[str, str]]) -> None:
        self.dropped.update(dropped)
        self.dropped_names = OrderedDict(names[-self.dropped_cap:])
        self._names_json = None
