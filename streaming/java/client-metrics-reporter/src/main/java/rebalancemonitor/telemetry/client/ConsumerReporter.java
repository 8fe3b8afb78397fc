package rebalancemonitor.telemetry.client;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import rebalancemonitor.telemetry.CanonicalEvents;
import rebalancemonitor.telemetry.Forwarder;
import rebalancemonitor.telemetry.ForwarderConfig;
import rebalancemonitor.telemetry.Member;
import rebalancemonitor.telemetry.MemberMetrics;

/**
 * A consumer's metrics reporter ({@code metric.reporters=rebalancemonitor.telemetry.client.ConsumerReporter}, the jar
 * on the class path): every {@code rebalance.monitor.interval.ms} it sends a {@code client_metrics} snapshot of the
 * consumer's heartbeat and poll clocks, and a {@code leave} when the consumer closes. It cannot see the member id:
 * the core matches it by group and client id to the member the coordinator records. Its settings are the
 * consumer's own properties (see {@link ForwarderConfig}); without group.id it stays idle.
 */
public class ConsumerReporter implements MetricsReporter {
    private static final List<String> GROUPS = List.of("consumer-coordinator-metrics", "consumer-metrics");

    private final Map<MetricName, KafkaMetric> metrics = new ConcurrentHashMap<>();
    private volatile Member who;
    private Integer sessionTimeoutMs;
    private Integer rebalanceTimeoutMs;
    private Integer intervalMs;
    private Forwarder forwarder;
    private ScheduledExecutorService timer;

    @Override
    public void configure(Map<String, ?> configs) {
        Object group = configs.get("group.id");
        if (group == null || String.valueOf(group).isEmpty()) {
            return;  // not a group member: nothing to report
        }
        Object bootstrap = configs.get("bootstrap.servers");
        String fallback = bootstrap instanceof List
            ? String.join(",", ((List<?>) bootstrap).stream().map(String::valueOf).toArray(String[]::new))
            : bootstrap == null ? null : String.valueOf(bootstrap);
        ForwarderConfig config = ForwarderConfig.from(configs, fallback);
        String clientId = configs.get("client.id") == null ? null : String.valueOf(configs.get("client.id"));
        Object instance = configs.get("group.instance.id");
        who = new Member(String.valueOf(group), "", instance == null ? null : String.valueOf(instance), clientId, null);
        sessionTimeoutMs = integer(configs.get("session.timeout.ms"));
        rebalanceTimeoutMs = integer(configs.get("max.poll.interval.ms"));
        intervalMs = config.intervalMs;
        forwarder = new Forwarder(config, "kafka.consumer:type=rebalance-monitor-reporter,client-id="
            + quote(clientId), "rebalance-monitor-reporter");
        timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "rebalance-monitor-reporter-timer");
            t.setDaemon(true);
            return t;
        });
        timer.scheduleAtFixedRate(this::offerSnapshot, config.intervalMs, config.intervalMs, TimeUnit.MILLISECONDS);
    }

    private void offerSnapshot() {
        forwarder.offer(counters -> snapshot());
    }

    /** The events of one snapshot of the consumer's metrics (runs on the forwarder's thread). */
    private List<String[]> snapshot() {
        MemberMetrics m = new MemberMetrics();
        for (KafkaMetric metric : metrics.values()) {
            Object v = metric.metricValue();
            if (v instanceof Number) {
                m.take(MemberMetrics.otlpName(metric.metricName().group(), metric.metricName().name()),
                    ((Number) v).doubleValue());
            }
        }
        if (m.isEmpty()) {
            return Collections.emptyList();
        }
        Member w = who;
        List<String[]> out = new ArrayList<>(1);
        out.add(new String[] {w.group, CanonicalEvents.clientMetrics(System.currentTimeMillis(), w, m,
            CanonicalEvents.SOURCE_REPORTER, intervalMs, null, sessionTimeoutMs, rebalanceTimeoutMs)});
        return out;
    }

    @Override
    public void init(List<KafkaMetric> initial) {
        for (KafkaMetric metric : initial) {
            metricChange(metric);
        }
    }

    @Override
    public void metricChange(KafkaMetric metric) {
        MetricName name = metric.metricName();
        if (GROUPS.contains(name.group()) && name.tags().size() <= 1) {
            metrics.put(name, metric);
        }
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
        metrics.remove(metric.metricName());
    }

    @Override
    public void close() {
        if (forwarder == null) {
            return;
        }
        timer.shutdownNow();
        Member w = who;
        forwarder.offer(counters -> List.<String[]>of(
            new String[] {w.group, CanonicalEvents.leave(System.currentTimeMillis(), w, CanonicalEvents.CLOSE_REASON,
                CanonicalEvents.SOURCE_REPORTER)}));
        forwarder.close();
        forwarder = null;
    }

    private static Integer integer(Object v) {
        if (v == null) {
            return null;
        }
        try {
            return Integer.valueOf(String.valueOf(v).trim());
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static String quote(String s) {
        return javax.management.ObjectName.quote(s == null ? "" : s);
    }
}
