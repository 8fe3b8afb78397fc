"""Which consumer groups the monitor watches: `groups.allow` and `groups.deny`, one rule everywhere.

Both are regular expressions matched against the whole group name (`re.fullmatch`; write `prod-.*` for a
prefix). A group is watched when `allow` is unset or matches it, and `deny` is unset or does not match it.
The cluster-wide key "" (coordinator moves, end offsets, partition counts) is always kept.

The same predicate is applied by `replay` (before a group gets a monitor), by the Spark job's decode stage
(before the shuffle, so a group left out never has state), and by the exporter (also to a snapshot taken
under other settings). Events of groups left out are not errors: they are neither dead-lettered nor counted
as rejects; the exporter counts each such group once in `rebalance_monitor_groups_dropped_total{reason="denied"}`.
Pure: no I/O.
"""
from __future__ import annotations

import re

CLUSTER_KEY = ""


def compile_pattern(pattern: str) -> re.Pattern:
    """`pattern` compiled as the filter applies it (no flags; matched against the whole name). The configuration
    checks `groups.allow`/`groups.deny` with this too (config_values.py), so what it accepts is what is applied."""
    return re.compile(pattern)


class GroupFilter:
    """The predicate of `groups.allow` / `groups.deny` (None or "" for unset)."""

    __slots__ = ("allow", "deny", "_allow", "_deny")

    def __init__(self, allow: str | None = None, deny: str | None = None):
        self.allow = allow or None
        self.deny = deny or None
        self._allow = compile_pattern(self.allow) if self.allow else None
        self._deny = compile_pattern(self.deny) if self.deny else None

    @property
    def active(self) -> bool:
        """False when every group is kept."""
        return self._allow is not None or self._deny is not None

    def keeps(self, group: str) -> bool:
        if group == CLUSTER_KEY:
            return True
        if self._allow is not None and self._allow.fullmatch(group) is None:
            return False
        return self._deny is None or self._deny.fullmatch(group) is None

    __call__ = keeps

    def to_options(self) -> dict:
        """The settings as plain data (to ship to Spark's executors)."""
        return {"allow": self.allow, "deny": self.deny}

    @classmethod
    def from_options(cls, options: dict | None) -> "GroupFilter | None":
        """The filter of `to_options`' output, or None if it keeps every group."""
        f = cls((options or {}).get("allow"), (options or {}).get("deny"))
        return f if f.active else None
