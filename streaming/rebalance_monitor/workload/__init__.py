"""Workload scenarios: real instrumented consumer groups that really rebalance (see `scenarios`).

    from rebalance_monitor.workload import run_scenario, SCENARIOS
    result = run_scenario("crash", "127.0.0.1:9092", "rebalance-events")
    result.expect   # what the monitor should report for result.group

Command line: `python -m rebalance_monitor.workload SCENARIO --bootstrap HOST:PORT --events-topic T`.
"""
from .live_members import Member, MemberProcess, MemberSpec
from .scenarios import (SCENARIOS, Scenario, ScenarioError, ScenarioResult, ensure_topics, run_scenario,
                        scenario_names, storm_threshold)
from . import kip848  # noqa: F401  (registers the KIP-848 and Java scenarios)
from .evidence import evidence, missing_triggers
from .traffic import TrafficProducer, produce_traffic

__all__ = ["SCENARIOS", "Scenario", "ScenarioError", "ScenarioResult", "run_scenario", "scenario_names", "storm_threshold",
           "ensure_topics", "evidence", "missing_triggers", "produce_traffic", "TrafficProducer", "Member", "MemberProcess", "MemberSpec"]
