"""The whole chain, no stand-ins: a storm scenario of real consumer groups on the real broker, the real Spark
job feeding the real exporter, a real Prometheus loaded with conf/rules scraping it, and Alertmanager
receiving the storm alert. Also: Prometheus counts each reconstructed generation exactly once."""
from __future__ import annotations

import glob
import os
import threading

import pytest

from helpers.alertmanager import AlertmanagerServer, PrometheusWithAlertmanager, copy_rules_with_short_for
from helpers.eventually import eventually

from rebalance_monitor.config import load_config
from rebalance_monitor.metrics.exporter import ExporterSettings, MetricsExporter
from rebalance_monitor.spark.job import StreamingQueryJob
from rebalance_monitor.testing.broker import free_port
from rebalance_monitor.workload import run_scenario

pytestmark = [pytest.mark.integration, pytest.mark.spark]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_a_real_storm_fires_the_storm_alert_at_alertmanager(spark, broker, tmp_path):
    events_topic = "storm-alert-events"
    broker.create_topics({events_topic: 1})
    exporter = MetricsExporter(ExporterSettings(host="127.0.0.1", port=free_port())).start()
    cfg = load_config(env={}, overrides={
        "kafka.bootstrap_servers": broker.bootstrap, "kafka.events_topic": events_topic,
        "kafka.starting_offsets": "earliest", "kafka.connector": "python",
        "state.checkpoint_location": str(tmp_path / "ck"), "state.watermark_delay": "1s",
        "sinks.history.parquet_path": str(tmp_path / "h"), "sinks.dead_letter.path": str(tmp_path / "d"),
        "spark.trigger_interval": "1s", "core.settle": "3s"})
    generations = []
    lock = threading.Lock()

    def keep(_b, recs, _d):
        with lock:
            generations.extend(r for r in recs if r["kind"] == "generation" and r["group"] == "full-storm")

    job = StreamingQueryJob(cfg, spark=spark, updater=exporter.updater, on_records=keep)
    (tmp_path / "rules").mkdir()
    rules = copy_rules_with_short_for(sorted(glob.glob(os.path.join(ROOT, "conf", "rules", "*.yml"))),
                                      tmp_path / "rules", "1s")
    try:
        with AlertmanagerServer() as am, PrometheusWithAlertmanager(
                [f"127.0.0.1:{exporter.port}"], alertmanager=am, rule_files=rules, scrape_interval="1s") as prom:
            job.start()
            run_scenario("storm", broker.bootstrap, events_topic, group="full-storm")
            alert = am.wait_for_alert("KafkaConsumerGroupRebalanceStorm", {"group": "full-storm"}, timeout_s=120)
            assert alert["status"]["state"] == "active"
            # a monitor of one Kafka cluster names it "default" (no kafka.clusters in its configuration)
            assert alert["labels"]["kafka_cluster"] == "default"
            assert alert["annotations"]["summary"] == "Rebalance storm in consumer group full-storm on cluster default"
            # a rebalance is counted once per generation: Prometheus agrees with the job's records. The job
            # may still be reporting the storm's last generations: the two agree once Prometheus has scraped
            # what the job reported (read in the same poll), and a generation counted twice never agrees.
            with lock:
                assert len(generations) >= 4  # storm.min_rebalances generations inside the window
            seen = {}

            def agree():
                with lock:
                    n = len(generations)
                seen.update(prometheus=prom.values('kafka_consumergroup_generations_total{group="full-storm"}',
                                                   "group"), records=n)
                return seen["prometheus"] == {"full-storm": float(n)} and n

            n = eventually(agree, 60, lambda: f"Prometheus to count the job's generations of full-storm: {seen}",
                           interval_s=1)
            with lock:
                assert len({g["generation"] for g in generations[:n]}) == n
    finally:
        job.stop()
        exporter.stop()
