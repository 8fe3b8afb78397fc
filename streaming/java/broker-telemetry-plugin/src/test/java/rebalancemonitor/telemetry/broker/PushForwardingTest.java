package rebalancemonitor.telemetry.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.server.telemetry.ClientTelemetryPayload;
import org.junit.jupiter.api.Test;
import rebalancemonitor.telemetry.MemberMetrics;
import rebalancemonitor.telemetry.OtlpWriter;

class PushForwardingTest {
    static final long T = 1_760_000_000_000_000_000L;

    @Test
    void aTerminatingPushOfAMemberIsItsLastSnapshotAndALeave() {
        byte[] push = OtlpWriter.metricsData(new OtlpWriter[] {
            OtlpWriter.stringAttribute("group_id", "g"), OtlpWriter.stringAttribute("group_member_id", "m")},
            OtlpWriter.gauge(MemberMetrics.LAST_HEARTBEAT, 1.0, T));
        List<String[]> evs = PushForwarding.events(push, "c-1", "127.0.0.1", "uuid", true, 2000, T / 1_000_000L + 5, null);
        assertEquals(2, evs.size());
        assertEquals("g", evs.get(0)[0]);
        assertTrue(evs.get(0)[1].contains("\"type\":\"client_metrics\",\"ts\":" + T / 1_000_000L), evs.get(0)[1]);
        assertTrue(evs.get(1)[1].startsWith("{\"v\":1,\"type\":\"leave\""), evs.get(1)[1]);
        assertTrue(evs.get(1)[1].contains("\"reason\":\"the consumer is being closed\""), evs.get(1)[1]);
    }

    @Test
    void aPushWithoutGroupIsIgnored() {
        byte[] push = OtlpWriter.metricsData(new OtlpWriter[] {OtlpWriter.stringAttribute("client_rack", "r")},
            OtlpWriter.gauge("org.apache.kafka.producer.record.send.rate", 1.0, T));
        assertTrue(PushForwarding.events(push, "p", "h", "u", false, 0, 1L, null).isEmpty());
    }

    static ClientTelemetryPayload payload(String contentType, byte[] data) {
        return new ClientTelemetryPayload() {
            @Override public Uuid clientInstanceId() { return Uuid.randomUuid(); }
            @Override public boolean isTerminating() { return false; }
            @Override public String contentType() { return contentType; }
            @Override public ByteBuffer data() { return ByteBuffer.wrap(data); }
        };
    }

    @Test
    void everyCallOnTheRequestThreadIsTimedOnTheMBean() {
        PushForwarding forwarding = new PushForwarding();
        // a cluster nobody listens on: the forwarder's producer never connects, the request-thread path is all
        forwarding.configure(Map.of("rebalance.monitor.bootstrap.servers", "127.0.0.1:1"));
        try {
            byte[] push = OtlpWriter.metricsData(new OtlpWriter[] {OtlpWriter.stringAttribute("group_id", "g")},
                OtlpWriter.gauge(MemberMetrics.LAST_POLL, 1.0, T));
            forwarding.export(null, payload("OTLP", push), 2000);
            forwarding.export(null, payload("JSON", push), 2000);  // ignored, and timed all the same
            assertEquals(2, forwarding.forwarder().getCallerCalls());
            assertEquals(1, forwarding.forwarder().getAccepted());
            assertEquals(1, forwarding.forwarder().getIgnored());
            assertTrue(forwarding.forwarder().getCallerNanosTotal() > 0);
            assertTrue(forwarding.forwarder().getCallerNanosMax() <= forwarding.forwarder().getCallerNanosTotal());
        } finally {
            forwarding.close();
        }
    }
}
