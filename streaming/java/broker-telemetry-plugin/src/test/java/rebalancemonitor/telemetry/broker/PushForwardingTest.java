package rebalancemonitor.telemetry.broker;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
    void aClientClockFarAheadIsForwardedAsItIsWithTheArrivalBeside() {
        // the client's time two hours ahead of the broker's: the plugin does not judge it, the core does
        long arrival = T / 1_000_000L - 7_200_000L;
        byte[] push = OtlpWriter.metricsData(new OtlpWriter[] {
            OtlpWriter.stringAttribute("group_id", "g"), OtlpWriter.stringAttribute("group_member_id", "m")},
            OtlpWriter.gauge(MemberMetrics.LAST_HEARTBEAT, 1.0, T));
        List<String[]> evs = PushForwarding.events(push, "c-1", "h", "u", true, 2000, arrival, null);
        assertEquals(2, evs.size());
        for (String[] ev : evs) {
            assertTrue(ev[1].contains("\"ts\":" + T / 1_000_000L + ","), ev[1]);
            assertTrue(ev[1].contains("\"received_ms\":" + arrival + "}"), ev[1]);
        }
    }

    @Test
    void aPushWithoutItsOwnTimeIsAtItsArrival() {
        byte[] push = OtlpWriter.metricsData(new OtlpWriter[] {
            OtlpWriter.stringAttribute("group_id", "g"), OtlpWriter.stringAttribute("group_member_id", "m")},
            OtlpWriter.gauge(MemberMetrics.LAST_HEARTBEAT, 1.0, 0L));
        String ev = PushForwarding.events(push, "c-1", "h", "u", false, 2000, 1234L, null).get(0)[1];
        assertTrue(ev.contains("\"ts\":1234,") && ev.contains("\"received_ms\":1234}"), ev);
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

    @Test
    void aPushOfStandardMetricsOnlyIsForwardedWithThemAndNoMemberId() {
        // what librdkafka pushes: group_id, no member id; no heartbeat or poll clock; delta sums
        byte[] push = OtlpWriter.metricsData(new OtlpWriter[] {OtlpWriter.stringAttribute("group_id", "g")},
            OtlpWriter.gauge(MemberMetrics.REBALANCE_LATENCY_AVG, 12.5, T),
            OtlpWriter.gauge(MemberMetrics.REBALANCE_LATENCY_MAX, 40.0, T),
            OtlpWriter.sum(MemberMetrics.REBALANCE_LATENCY_TOTAL, 40, T),
            OtlpWriter.sum(MemberMetrics.REBALANCE_TOTAL, 2, T),
            OtlpWriter.gauge(MemberMetrics.POLL_IDLE_RATIO, 0.75, T));
        List<String[]> evs = PushForwarding.events(push, "rd-1", "127.0.0.1", "u", true, 2000, T / 1_000_000L, null);
        assertEquals(1, evs.size());  // terminating, but no member to leave
        String ev = evs.get(0)[1];
        assertTrue(ev.contains("\"member_id\":\"\""), ev);
        assertTrue(ev.contains("\"poll_idle_ratio\":0.75,\"rebalance_latency_avg_ms\":13,\"rebalance_latency_max_ms\":40,"
            + "\"rebalances\":2,\"rebalance_latency_ms\":40"), ev);
        assertFalse(ev.contains("last_heartbeat_ms_ago") || ev.contains("last_poll_ms_ago"), ev);
    }

    @Test
    void cumulativeSumsAreNotTakenForChangesSinceThePreviousPush() {
        OtlpWriter point = new OtlpWriter().fixed64Field(3, T).fixed64Field(6, 9);
        OtlpWriter cumulative = new OtlpWriter().stringField(1, MemberMetrics.REBALANCE_TOTAL)
            .messageField(7, new OtlpWriter().messageField(1, point).varintField(2, 2).varintField(3, 1));
        byte[] push = OtlpWriter.metricsData(new OtlpWriter[] {OtlpWriter.stringAttribute("group_id", "g")},
            cumulative, OtlpWriter.gauge(MemberMetrics.POLL_IDLE_RATIO, 0.5, T));
        String ev = PushForwarding.events(push, "c", "h", "u", false, 0, T / 1_000_000L, null).get(0)[1];
        assertFalse(ev.contains("\"rebalances\""), ev);
    }

    @Test
    void librdkafkasMemberIdAttributeNamesTheMember() {
        byte[] push = OtlpWriter.metricsData(new OtlpWriter[] {
            OtlpWriter.stringAttribute("member_id", "rd-1-abc"), OtlpWriter.stringAttribute("group_id", "g")},
            OtlpWriter.gauge(MemberMetrics.POLL_IDLE_RATIO, 0.5, T));
        List<String[]> evs = PushForwarding.events(push, "rd-1", "h", "u", true, 2000, T / 1_000_000L, null);
        assertEquals(2, evs.size());
        assertTrue(evs.get(0)[1].contains("\"member_id\":\"rd-1-abc\""), evs.get(0)[1]);
        assertTrue(evs.get(1)[1].contains("\"type\":\"leave\"") && evs.get(1)[1].contains("rd-1-abc"), evs.get(1)[1]);
    }
}
