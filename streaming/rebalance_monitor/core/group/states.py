"""The states of a consumer group, as the coordinator names them (the `state` of a `group_status` record)."""
from __future__ import annotations

EMPTY = "Empty"  # no members
PREPARING = "PreparingRebalance"  # a rebalance started: members are (re)joining
COMPLETING = "CompletingRebalance"  # the new generation formed: members are syncing its assignment
STABLE = "Stable"  # every member has its assignment for the current generation
DEAD = "Dead"  # the group's metadata was deleted
STATES = (EMPTY, PREPARING, COMPLETING, STABLE, DEAD)
