"""spark/run.MonitorService, the one lifecycle of `run` and the demo: start order, back-off while Kafka does not answer,
stop order. Its parts are replaced by recorders: no broker, no Spark."""
from __future__ import annotations

import pytest

from rebalance_monitor.config import load_config
from rebalance_monitor.spark import cluster_watch, run


class Recorder:
    def __init__(self):
        self.events: list[str] = []


@pytest.fixture()
def parts(monkeypatch):
    rec = Recorder()
    probes = {"left_failing": 1}

    class Updater:
        def set_ready(self, ready, reason=None):
            rec.events.append(f"ready={ready}" + (f" ({reason.split(':')[0]})" if reason else ""))

    class Exporter:
        url = "http://127.0.0.1:1"

        def __init__(self, settings, updater=None):
            rec.events.append(f"exporter built on port {settings.port}")
            self.updater = updater if updater is not None else Updater()

        def start(self):
            rec.events.append("exporter started")
            return self

        def stop(self):
            rec.events.append("exporter stopped")

    class Query:
        isActive = True
        lastProgress = None

    class Job:
        def __init__(self, cfg, updater=None, on_records=None):
            rec.events.append("job built" + (" with the exporter's updater" if updater is not None else ""))
            self.cfg = cfg
            self.spark = self.query = None
            self.plan = self

        def session(self):
            rec.events.append("spark started")
            self.spark = object()

        def checkpoint_is_local(self):
            return not self.cfg.state.checkpoint_location.startswith("s3a://")

        def restore_metrics(self, files=None):
            rec.events.append("metrics restored" + (" from local files" if files is not None else " through Spark"))

        def start(self):
            rec.events.append("query started")
            self.query = Query()
            return self.query

        def refresh_liveness(self):
            pass

        def input_idle(self):
            return False

        def stop_query(self):
            rec.events.append("query stopped")

        def stop(self):
            rec.events.append("job stopped")

    class Reach:
        address = "h:1"

        def __init__(self, connection, client):
            self.failures = 0

        def check(self):
            rec.events.append("kafka probed")
            if probes["left_failing"]:
                probes["left_failing"] -= 1
                self.failures += 1
                return "Connection refused"
            return None

        def reason(self, error, delay):
            return f"Kafka at h:1 is not reachable: {error}; retrying in {delay:.0f} s"

    class Lag:
        def stop(self):
            rec.events.append("lag poller stopped")

    def start_lag(cfg, updater):
        rec.events.append("lag poller started")
        return Lag()

    import rebalance_monitor.metrics.exporter as exporter_module

    monkeypatch.setattr(exporter_module, "MetricsExporter", Exporter)
    monkeypatch.setattr(cluster_watch, "StreamingQueryJob", Job)
    monkeypatch.setattr(cluster_watch, "KafkaReach", Reach)
    monkeypatch.setattr(cluster_watch, "_start_lag_poller", start_lag)
    monkeypatch.setattr(cluster_watch, "_log_progress", lambda query, job, out=None: None)
    return rec


def test_starts_in_order_backs_off_and_stops_in_reverse(parts, tmp_path):
    cfg = load_config(env={}, overrides={"exporter.port": 9399, "state.checkpoint_location": str(tmp_path)})
    monitor = run.MonitorService(cfg, on_tick=lambda: (parts.events.append("tick"), monitor.stop.set()))
    assert parts.events == []  # building it does nothing
    monitor.start_exporter()
    code = monitor.serve()
    monitor.close()
    assert code == 0
    assert parts.events == [
        "exporter built on port 9399", "job built with the exporter's updater", "metrics restored from local files",
        "exporter started", "kafka probed", "ready=False (Kafka at h)", "kafka probed",  # one back-off step while Kafka did not answer
        "lag poller started", "spark started", "query started", "tick",
        "job stopped", "lag poller stopped", "exporter stopped",
    ]


def test_run_once_against_an_unreachable_kafka_starts_nothing_else(parts, tmp_path):
    cfg = load_config(env={}, overrides={"state.checkpoint_location": str(tmp_path)})
    monitor = run.MonitorService(cfg)
    monitor.start_exporter()
    assert monitor.serve(once=True) == 1
    monitor.close()
    assert parts.events[4:] == ["kafka probed", "ready=False (Kafka at h)", "job stopped", "exporter stopped"]


def test_a_checkpoint_on_s3_is_restored_through_spark_before_metrics_answer(parts):
    """The snapshot beside a checkpoint on S3 (or HDFS) is read through Hadoop's FileSystem API: /metrics
    answers only once Spark has started and read it (never counters lower than the last scrape's)."""
    cfg = load_config(env={}, overrides={"exporter.port": 9399, "state.checkpoint_location": "s3a://b/ck"})
    monitor = run.MonitorService(cfg, on_tick=lambda: monitor.stop.set())
    monitor.start_exporter()
    assert parts.events == ["exporter built on port 9399", "job built with the exporter's updater"]
    monitor.serve()
    monitor.close()
    assert parts.events[2:7] == ["kafka probed", "ready=False (Kafka at h)", "kafka probed", "lag poller started",
                                 "spark started"]
    assert parts.events[7:9] == ["metrics restored through Spark", "exporter started"]
    assert parts.events[-1] == "exporter stopped"


def test_the_demo_runs_the_monitor():
    """The demo wires nothing of its own: its exporter, job and lag poller come from run.MonitorService."""
    import ast
    import inspect

    import rebalance_monitor.demo as demo

    tree = ast.parse(inspect.getsource(demo))
    called = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
              for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, (ast.Name, ast.Attribute))}
    service = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
               for a in n.names if a.name == "MonitorService"}
    assert service and service <= called and {"start_exporter", "serve", "close"} <= called
    assert not called & {"StreamingQueryJob", "MetricsExporter", "ExporterSettings", "BrokerOffsetsPoller",
                         "BrokerOffsets"}


def test_several_clusters_each_run_their_own_watch_and_one_down_holds_up_no_other(parts, monkeypatch, tmp_path):
    """Two clusters: the one whose Kafka never answers backs off on its own; the other's query starts and runs
    (each watch in its own thread, on the one Spark session), and the stop ends both."""
    import threading

    class Reach:
        def __init__(self, connection, client):
            self.address = connection.bootstrap_servers
            self.failures = 0

        def check(self):
            parts.events.append(f"kafka probed at {self.address}")
            if self.address.endswith(":9"):
                self.failures += 1
                return "Connection refused"
            return None

        def reason(self, error, delay):
            return f"Kafka at {self.address} is not reachable: {error}; retrying in {delay:.0f} s"

    class Updater:
        def __init__(self, name):
            self.name = name

        def set_ready(self, ready, reason=None):
            parts.events.append(f"{self.name} ready={ready}")

        def set_kafka_up(self, up):
            parts.events.append(f"{self.name} up={up}")

    import rebalance_monitor.metrics.exporter as exporter_module

    settings_cls = exporter_module.ExporterSettings
    monkeypatch.setattr(cluster_watch, "KafkaReach", Reach)
    monkeypatch.setattr(settings_cls, "make_updater", lambda self: Updater(self.cluster))
    monkeypatch.setattr(run, "fleet_metrics", lambda clusters, updaters: updaters)
    started = threading.Event()

    def tick():
        started.set()
    cfg = load_config(env={}, overrides={
        "state.checkpoint_location": str(tmp_path), "lag.enabled": False,
        "clusters": [{"name": "down", "kafka": {"bootstrap_servers": "127.0.0.1:9"}},
                     {"name": "up", "kafka": {"bootstrap_servers": "127.0.0.1:19092"}}]})
    monitor = run.MonitorService(cfg, on_tick=tick)
    monitor.start_exporter()
    assert [w.name for w in monitor.watches] == ["down", "up"]
    assert [w.cfg.state.checkpoint_location for w in monitor.watches] == [
        f"{tmp_path}/clusters/down", f"{tmp_path}/clusters/up"]
    result = {}
    serving = threading.Thread(target=lambda: result.setdefault("code", monitor.serve()))
    serving.start()
    assert started.wait(30), parts.events
    monitor.stop.set()
    serving.join(30)
    monitor.close()
    assert result["code"] == 0
    ev = parts.events
    assert "up up=True" in ev and "query started" in ev and "down up=True" not in ev
    assert ev.count("spark started") == 1                       # one session for both clusters
    assert "down up=False" in ev and ev.count("kafka probed at 127.0.0.1:19092") == 1
    assert ev[-1] == "exporter stopped" and ev.count("job stopped") == 2


def test_several_clusters_queries_start_one_at_a_time(parts, monkeypatch, tmp_path):
    """A query's start spawns its Kafka source's Python runner, which must connect back to the driver JVM within
    Spark's fixed 10 s: with several clusters the queries start one at a time, the next once the last one's first
    batch has made progress (cluster_watch.StartGate)."""
    import threading

    import rebalance_monitor.metrics.exporter as exporter_module

    class Query:
        isActive = True
        lastProgress = None

    queries, earlier_progressed, started = [], [], threading.Semaphore(0)

    def start(job):
        earlier_progressed.append(all(q.lastProgress for q in queries))
        queries.append(Query())
        started.release()
        return queries[-1]

    class Updater:
        def set_ready(self, ready, reason=None):
            pass

    monkeypatch.setattr(cluster_watch.StreamingQueryJob, "start", start)
    monkeypatch.setattr(exporter_module.ExporterSettings, "make_updater", lambda self: Updater())
    monkeypatch.setattr(run, "fleet_metrics", lambda clusters, updaters: updaters)
    cfg = load_config(env={}, overrides={
        "state.checkpoint_location": str(tmp_path), "lag.enabled": False,
        "clusters": [{"name": "a"}, {"name": "b"}, {"name": "c"}]})
    monitor = run.MonitorService(cfg)
    monitor.start_exporter()
    serving = threading.Thread(target=monitor.serve)
    serving.start()
    for _ in range(3):
        assert started.acquire(timeout=30), parts.events
        queries[-1].lastProgress = {"batchId": 0}  # its first batch: the next query may start
    monitor.stop.set()
    serving.join(30)
    monitor.close()
    assert earlier_progressed == [True, True, True]


def test_a_cluster_said_down_while_its_query_ran_is_said_up_by_its_probe_though_batches_resumed_first(
        parts, monkeypatch, tmp_path):
    """The broker goes away under a running query: its batches stop, the probe says it down. The broker comes back
    and the query's batches resume before the next probe: the cluster must still be said up again (it stayed down
    on its metrics, the probe skipped while reads were fresh, in a three-cluster run on real brokers)."""
    clock = {"now": 1000.0}
    monkeypatch.setattr(cluster_watch.time, "monotonic", lambda: clock["now"])
    said = []

    class Updater:
        def set_kafka_up(self, up):
            said.append(up)

        def note_kafka_read(self):
            pass

    cfg = load_config(env={}, overrides={"state.checkpoint_location": str(tmp_path)})
    watch = cluster_watch.ClusterWatch(cfg, service=None, updater=Updater(), stop=None)
    watch.reach.check = lambda: "Connection refused"
    clock["now"] += watch.stale_s + 1  # no batch for longer than the stale time: probed, down
    watch._check_while_running()
    assert said == [False]
    watch.reach.check = lambda: None  # back; a batch completes before the next probe is due
    for _ in range(3):
        clock["now"] += watch.stale_s / 2
        watch._read_now()
        watch._check_while_running()
    assert said[-1] is True
    n = len(said)
    clock["now"] += watch.stale_s / 2  # up again, reads fresh: no more probes
    watch._read_now()
    watch._check_while_running()
    assert len(said) == n
