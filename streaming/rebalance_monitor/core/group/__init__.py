"""One consumer group's reconstruction: the per-group state machine of the core.

`GroupMonitor` (monitor.py) is the facade the drivers use (`core/runner.py`). The package is split by concept:

| module | concept |
| --- | --- |
| monitor.py | the facade: the group's fields, `process` / `process_beat` / `advance_to`, status, dispatch |
| states.py | the group states (Empty, PreparingRebalance, CompletingRebalance, Stable, Dead) |
| membership.py | members entering (capped) and leaving; static members; joins without a member id |
| deadlines.py | the cached lower bound of the earliest member deadline |
| timers.py | firing member deadlines, the settle timer, a storm's end, a held record's end, in time order |
| rebalance.py | a rebalance from its first trigger to its `generation` record |
| held.py | a `generation` record held for its members' late syncs (the log completed it first); ownership |
| client_events.py | the handlers of the clients' events (join, sync, heartbeat, poll, leave, ...) |
| client_metrics.py | the snapshots of a member's own heartbeat and poll clocks (Java clients: KIP-714, reporter) |
| client_standard.py | the clients' own KIP-714 standard metrics (librdkafka's only ones), per client, never member evidence |
| coordinator_events.py | the handlers of the coordinator's and the cluster's events |
| streams_topology.py | a streams group's topology, assignment configs and tasks before each epoch (KIP-1071) |
| codec.py | the snapshot kept between micro-batches, versioned |

Why a rebalance happened is decided by the rules of `core/causes.py`.
"""
from __future__ import annotations

from .monitor import GroupMonitor
from .states import COMPLETING, DEAD, EMPTY, PREPARING, STABLE, STATES

__all__ = ["GroupMonitor", "EMPTY", "PREPARING", "COMPLETING", "STABLE", "DEAD", "STATES"]
