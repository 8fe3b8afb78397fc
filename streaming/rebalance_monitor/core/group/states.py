"""The states of a consumer group, as the coordinator names them (the `state` of a `group_status` record)."""
from __future__ import annotations

from ..vocabulary import GroupState

# the state machine's short names for the vocabulary's states
EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING
COMPLETING = GroupState.COMPLETING
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD
STATES = tuple(GroupState)
