"""Where a streaming query's micro-batches spend their time, stage by stage, from Spark's own event log.

The job's micro-batch has two stages: reading and decoding (one task per Kafka partition: the Python source, or
Spark's connector and the JVM's packing and the decode stage), and the stateful step (one task per shuffle
partition: the shuffle read, the group runners, the state store's commit). The benchmarks turn the event log on
(`event_log_conf`) and read it back here, so that a throughput figure comes with the split between the two.

Per stage: its wall time (submission to completion), its tasks' run time (summed over tasks, so up to the
cores times the wall time), the JVM threads' CPU time of its tasks and their garbage collection time. The
Python workers' CPU is not in Spark's task metrics: a stage's task time less its JVM CPU is mostly the time
its tasks waited on Python.
"""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass

READ = "read and decode"
STATE = "stateful step"
OTHER = "other"


def event_log_conf(log_dir: str) -> dict:
    """The session settings that make Spark write its event log, plain JSON lines, into `log_dir`."""
    os.makedirs(log_dir, exist_ok=True)
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": "file://" + os.path.abspath(log_dir),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false"}


@dataclass
class StageTime:
    batch: int
    stage: int
    kind: str  # READ, STATE or OTHER
    tasks: int = 0
    wall_s: float = 0.0
    task_s: float = 0.0
    jvm_cpu_s: float = 0.0
    gc_s: float = 0.0


def _kind(rdd_names: list[str]) -> str:
    if "StateStoreRDD" in rdd_names:
        return STATE
    if "DataSourceRDD" in rdd_names or "KafkaSourceRDD" in rdd_names:
        return READ
    return OTHER


def stage_times(log_dir: str, query_id: str) -> list[StageTime]:
    """The completed stages of streaming query `query_id` in the event logs under `log_dir`, by stage id."""
    stages: dict[int, StageTime] = {}
    walls: dict[int, float] = {}
    tasks: dict[int, list] = {}
    for path in glob.glob(os.path.join(log_dir, "**", "*"), recursive=True):
        if os.path.isdir(path):
            continue
        with open(path) as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:  # a line being written
                    continue
                kind = e.get("Event")
                if kind == "SparkListenerStageSubmitted":
                    props = e.get("Properties") or {}
                    if props.get("sql.streaming.queryId") != query_id or "streaming.sql.batchId" not in props:
                        continue
                    info = e["Stage Info"]
                    names = [r.get("Name") for r in info.get("RDD Info", [])]
                    stages[info["Stage ID"]] = StageTime(int(props["streaming.sql.batchId"]), info["Stage ID"],
                                                         _kind(names))
                elif kind == "SparkListenerStageCompleted":
                    info = e["Stage Info"]
                    if info.get("Submission Time") and info.get("Completion Time"):
                        walls[info["Stage ID"]] = (info["Completion Time"] - info["Submission Time"]) / 1000.0
                elif kind == "SparkListenerTaskEnd":
                    tasks.setdefault(e["Stage ID"], []).append(e.get("Task Metrics") or {})
    out = []
    for sid, st in sorted(stages.items()):
        if sid not in walls:
            continue
        st.wall_s = walls[sid]
        for m in tasks.get(sid, ()):
            st.tasks += 1
            st.task_s += m.get("Executor Run Time", 0) / 1000.0
            st.jvm_cpu_s += m.get("Executor CPU Time", 0) / 1e9
            st.gc_s += m.get("JVM GC Time", 0) / 1000.0
        out.append(st)
    return out


def by_kind(stages: list[StageTime], batches) -> dict[str, StageTime]:
    """The stages of `batches` summed per kind (READ, STATE, OTHER)."""
    out: dict[str, StageTime] = {}
    wanted = set(batches)
    for st in stages:
        if st.batch not in wanted:
            continue
        total = out.setdefault(st.kind, StageTime(-1, -1, st.kind))
        total.tasks += st.tasks
        total.wall_s += st.wall_s
        total.task_s += st.task_s
        total.jvm_cpu_s += st.jvm_cpu_s
        total.gc_s += st.gc_s
    return out
