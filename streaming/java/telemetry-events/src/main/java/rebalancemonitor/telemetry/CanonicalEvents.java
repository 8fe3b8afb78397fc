package rebalancemonitor.telemetry;

/**
 * Canonical events (docs/contract.md section 1) as JSON text: {@code client_metrics} (a snapshot of the member's
 * heartbeat and poll clocks) and {@code leave}. The Python core decides what they mean.
 */
public final class CanonicalEvents {
    public static final String SOURCE_PUSH = "kip714";
    public static final String SOURCE_REPORTER = "reporter";
    /** Kafka's own LeaveGroup reason for a consumer being closed. */
    public static final String CLOSE_REASON = "the consumer is being closed";

    private CanonicalEvents() {
    }

    public static String clientMetrics(long ts, Member who, MemberMetrics m, String source, Integer intervalMs,
                                       String clientInstanceId, Integer sessionTimeoutMs, Integer rebalanceTimeoutMs) {
        return clientMetrics(ts, who, m, source, intervalMs, clientInstanceId, sessionTimeoutMs, rebalanceTimeoutMs,
            null);
    }

    /** The same with {@code receivedMs}: when the broker received the push ({@code received_ms}; null: left out),
     * beside the client's own time {@code ts}. Which of the two the event's time is, the core decides. */
    public static String clientMetrics(long ts, Member who, MemberMetrics m, String source, Integer intervalMs,
                                       String clientInstanceId, Integer sessionTimeoutMs, Integer rebalanceTimeoutMs,
                                       Long receivedMs) {
        Json j = common("client_metrics", ts, who);
        j.put("source", source);
        j.put("interval_ms", intervalMs == null || intervalMs <= 0 ? null : Long.valueOf(intervalMs));
        j.put("client_instance_id", clientInstanceId);
        j.put("last_heartbeat_ms_ago", MemberMetrics.secondsToMs(m.lastHeartbeatSecondsAgo));
        j.put("last_poll_ms_ago", MemberMetrics.secondsToMs(m.lastPollSecondsAgo));
        j.put("poll_interval_max_ms", MemberMetrics.msOrNull(m.pollIntervalMaxMs));
        j.put("assigned_partitions", MemberMetrics.msOrNull(m.assignedPartitions));
        Double idle = m.pollIdleRatio;
        j.put("poll_idle_ratio", idle == null || idle.isNaN() || idle.isInfinite() ? null : idle);
        j.put("rebalance_latency_avg_ms", MemberMetrics.msOrNull(m.rebalanceLatencyAvgMs));
        j.put("rebalance_latency_max_ms", MemberMetrics.msOrNull(m.rebalanceLatencyMaxMs));
        j.put("rebalances", MemberMetrics.msOrNull(m.rebalancesDelta));
        j.put("rebalance_latency_ms", MemberMetrics.msOrNull(m.rebalanceLatencyDeltaMs));
        j.put("session_timeout_ms", sessionTimeoutMs == null ? null : Long.valueOf(sessionTimeoutMs));
        j.put("rebalance_timeout_ms", rebalanceTimeoutMs == null ? null : Long.valueOf(rebalanceTimeoutMs));
        j.put("received_ms", receivedMs);
        return j.end();
    }

    /** A client that closed, as its telemetry says (`source`: {@link #SOURCE_PUSH}, {@link #SOURCE_REPORTER}):
     * whether it also left the group (a LeaveGroup) is for the core to tell from the coordinator's view. */
    public static String leave(long ts, Member who, String reason, String source) {
        return leave(ts, who, reason, source, null);
    }

    /** The same with {@code receivedMs}, as {@link #clientMetrics(long, Member, MemberMetrics, String, Integer,
     * String, Integer, Integer, Long)} has it. */
    public static String leave(long ts, Member who, String reason, String source, Long receivedMs) {
        Json j = common("leave", ts, who);
        j.put("reason", reason);
        j.put("source", source);
        j.put("received_ms", receivedMs);
        return j.end();
    }

    private static Json common(String type, long ts, Member who) {
        Json j = new Json();
        j.put("v", 1L);
        j.put("type", type);
        j.put("ts", ts);
        j.put("group", who.group);
        j.put("member_id", who.memberId);
        j.put("group_instance_id", who.groupInstanceId);
        j.put("client_id", who.clientId);
        j.put("host", who.host);
        return j;
    }

    /** A flat JSON object writer; a null value leaves the key out (every optional field of the contract). */
    static final class Json {
        private final StringBuilder sb = new StringBuilder(256).append('{');
        private boolean first = true;

        void put(String key, Object value) {
            if (value == null) {
                return;
            }
            if (!first) {
                sb.append(',');
            }
            first = false;
            string(key);
            sb.append(':');
            if (value instanceof String) {
                string((String) value);
            } else {
                sb.append(value);
            }
        }

        String end() {
            return sb.append('}').toString();
        }

        private void string(String s) {
            sb.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"' || c == '\\') {
                    sb.append('\\').append(c);
                } else if (c < 0x20) {
                    sb.append(String.format("\\u%04x", (int) c));
                } else {
                    sb.append(c);
                }
            }
            sb.append('"');
        }
    }
}
