package rebalancemonitor.telemetry;

import java.util.Map;

/**
 * The consumer metrics the monitor uses, picked by their KIP-714 names ({@code org.apache.kafka.} + metric group
 * without {@code -metrics} + metric name, dashes as dots). The client reporter names Kafka's in-process metrics the
 * same way ({@link #otlpName}), so both plugins read one table.
 */
public final class MemberMetrics {
    public static final String PREFIX = "org.apache.kafka.";
    public static final String LAST_HEARTBEAT = PREFIX + "consumer.coordinator.last.heartbeat.seconds.ago";
    public static final String LAST_POLL = PREFIX + "consumer.last.poll.seconds.ago";
    public static final String POLL_INTERVAL_MAX = PREFIX + "consumer.time.between.poll.max";
    public static final String ASSIGNED_PARTITIONS = PREFIX + "consumer.coordinator.assigned.partitions";
    public static final String POLL_IDLE_RATIO = PREFIX + "consumer.poll.idle.ratio.avg";
    // KIP-714's standard consumer metrics (what librdkafka pushes too): rebalance latency, and the rebalance sums
    public static final String REBALANCE_LATENCY_AVG = PREFIX + "consumer.coordinator.rebalance.latency.avg";
    public static final String REBALANCE_LATENCY_MAX = PREFIX + "consumer.coordinator.rebalance.latency.max";
    public static final String REBALANCE_LATENCY_TOTAL = PREFIX + "consumer.coordinator.rebalance.latency.total";
    public static final String REBALANCE_TOTAL = PREFIX + "consumer.coordinator.rebalance.total";
    /** What a client-metrics subscription should ask for (kafka-client-metrics.sh --metrics). */
    public static final String[] SUBSCRIPTION = {
        PREFIX + "consumer.coordinator.", PREFIX + "consumer.last.poll.", PREFIX + "consumer.time.between.poll.",
        PREFIX + "consumer.poll.idle.ratio."};

    /** Seconds since the last heartbeat / poll (Kafka reports whole seconds; null: none yet or not reported). */
    public Double lastHeartbeatSecondsAgo;
    public Double lastPollSecondsAgo;
    /** Milliseconds: the longest time between two polls in the client's sample window. */
    public Double pollIntervalMaxMs;
    public Double assignedPartitions;
    public Double pollIdleRatio;
    /** Milliseconds: the client's average and longest rebalance in its sample window. */
    public Double rebalanceLatencyAvgMs;
    public Double rebalanceLatencyMaxMs;
    /** Since the client's previous push (delta sums; a push with cumulative sums leaves them null). */
    public Double rebalancesDelta;
    public Double rebalanceLatencyDeltaMs;

    /** The KIP-714 name of an in-process metric of group {@code group} named {@code name}. */
    public static String otlpName(String group, String name) {
        String g = group.endsWith("-metrics") ? group.substring(0, group.length() - "-metrics".length()) : group;
        return PREFIX + (g + "." + name).replace('-', '.');
    }

    /** Take one metric's value if it is one of ours; true when it was. */
    public boolean take(String otlpName, double value) {
        switch (otlpName) {
            case LAST_HEARTBEAT: lastHeartbeatSecondsAgo = value; return true;
            case LAST_POLL: lastPollSecondsAgo = value; return true;
            case POLL_INTERVAL_MAX: pollIntervalMaxMs = value; return true;
            case ASSIGNED_PARTITIONS: assignedPartitions = value; return true;
            case POLL_IDLE_RATIO: pollIdleRatio = value; return true;
            case REBALANCE_LATENCY_AVG: rebalanceLatencyAvgMs = value; return true;
            case REBALANCE_LATENCY_MAX: rebalanceLatencyMaxMs = value; return true;
            default: return false;
        }
    }

    public static MemberMetrics of(Map<String, OtlpMetrics.Point> metrics) {
        MemberMetrics m = new MemberMetrics();
        for (Map.Entry<String, OtlpMetrics.Point> e : metrics.entrySet()) {
            OtlpMetrics.Point p = e.getValue();
            if (!m.take(e.getKey(), p.value) && p.delta) {
                if (REBALANCE_TOTAL.equals(e.getKey())) {
                    m.rebalancesDelta = p.value;
                } else if (REBALANCE_LATENCY_TOTAL.equals(e.getKey())) {
                    m.rebalanceLatencyDeltaMs = p.value;
                }
            }
        }
        return m;
    }

    public boolean isEmpty() {
        return lastHeartbeatSecondsAgo == null && lastPollSecondsAgo == null && pollIntervalMaxMs == null
            && assignedPartitions == null && pollIdleRatio == null && rebalanceLatencyAvgMs == null
            && rebalanceLatencyMaxMs == null && rebalancesDelta == null && rebalanceLatencyDeltaMs == null;
    }

    /** A duration in seconds as whole milliseconds; null when absent, negative (Kafka's "never") or not finite. */
    static Long secondsToMs(Double seconds) {
        return seconds == null ? null : msOrNull(seconds * 1000.0);
    }

    static Long msOrNull(Double ms) {
        if (ms == null || ms.isNaN() || ms.isInfinite() || ms < 0 || ms > 1e13) {
            return null;
        }
        return Math.round(ms);
    }
}
