package rebalancemonitor.telemetry.broker;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import rebalancemonitor.telemetry.CanonicalEvents;
import rebalancemonitor.telemetry.Forwarder;
import rebalancemonitor.telemetry.ForwarderConfig;
import rebalancemonitor.telemetry.Member;
import rebalancemonitor.telemetry.MemberMetrics;
import rebalancemonitor.telemetry.OtlpMetrics;

/**
 * What both broker entry points share. On the request-handler thread {@link #export} only copies the payload and
 * offers it to the forwarder's bounded queue; decoding and producing happen on the forwarder's thread.
 * A push of a group member (resource attribute group_id) becomes a {@code client_metrics} event, and a push marked
 * terminating a {@code leave} as well; other clients' pushes are ignored (counted). The member id is KIP-714's
 * {@code group_member_id}, or librdkafka's {@code member_id}. An event's {@code ts} is the client's own measurement
 * time (its metric points' time; the push's arrival when it gave none) and {@code received_ms} the push's arrival
 * at the broker: a client clock far ahead of the broker's is the core's to judge (kafka.max_future_skew), not the
 * plugin's.
 */
final class PushForwarding {
    static final String MBEAN = "kafka.server:type=rebalance-monitor-telemetry";

    private volatile Forwarder forwarder;

    void configure(Map<String, ?> configs) {
        close();
        forwarder = new Forwarder(ForwarderConfig.from(configs, null), MBEAN, "rebalance-monitor-telemetry");
    }

    Forwarder forwarder() {
        return forwarder;
    }

    /** Never blocks, never throws: the broker's request thread calls it for every push. */
    void export(AuthorizableRequestContext ctx, ClientTelemetryPayload payload, int pushIntervalMs) {
        Forwarder f = forwarder;
        if (f == null) {
            return;
        }
        long started = System.nanoTime();
        try {
            ByteBuffer data = payload.data();
            if (data == null || !"OTLP".equalsIgnoreCase(String.valueOf(payload.contentType()))) {
                f.countIgnored();
                return;
            }
            byte[] bytes = new byte[data.remaining()];
            data.duplicate().get(bytes);
            String clientId = ctx == null ? null : ctx.clientId();
            String host = ctx == null || ctx.clientAddress() == null ? null : ctx.clientAddress().getHostAddress();
            String instance = payload.clientInstanceId() == null ? null : payload.clientInstanceId().toString();
            boolean terminating = payload.isTerminating();
            long received = System.currentTimeMillis();
            f.offer(counters -> events(bytes, clientId, host, instance, terminating, pushIntervalMs, received, counters));
        } catch (RuntimeException e) {
            f.countDecodeError();
        } finally {
            f.countCallerTime(System.nanoTime() - started);
        }
    }

    /** The events of one push (runs on the forwarder's thread; public for the tests). */
    static List<String[]> events(byte[] otlp, String clientId, String host, String clientInstanceId,
                                 boolean terminating, int pushIntervalMs, long receivedMs, Forwarder counters) {
        List<String[]> out = new ArrayList<>();
        for (OtlpMetrics.Resource res : OtlpMetrics.decode(otlp)) {
            String group = res.attributes.get("group_id");
            if (group == null || group.isEmpty()) {
                if (counters != null) {
                    counters.countIgnored();
                }
                continue;
            }
            String memberId = res.attributes.get("group_member_id");
            if (memberId == null || memberId.isEmpty()) {
                memberId = res.attributes.get("member_id");  // librdkafka's name for it (2.16: once it has joined)
            }
            Member who = new Member(group, memberId,
                res.attributes.get("group_instance_id"), clientId, host);
            long ts = receivedMs;
            for (OtlpMetrics.Point p : res.metrics.values()) {  // the client's own measurement time
                long ms = p.timeUnixNano / 1_000_000L;
                if (ms > 0) {
                    ts = ms;
                    break;
                }
            }
            MemberMetrics m = MemberMetrics.of(res.metrics);
            out.add(new String[] {group, CanonicalEvents.clientMetrics(ts, who, m, CanonicalEvents.SOURCE_PUSH,
                pushIntervalMs > 0 ? pushIntervalMs : null, clientInstanceId, null, null, receivedMs)});
            if (terminating && !who.memberId.isEmpty()) {
                out.add(new String[] {group, CanonicalEvents.leave(ts, who, CanonicalEvents.CLOSE_REASON,
                    CanonicalEvents.SOURCE_PUSH, receivedMs)});
            }
        }
        return out;
    }

    void close() {
        Forwarder f = forwarder;
        forwarder = null;
        if (f != null) {
            f.close();
        }
    }
}
