package rebalancemonitor.telemetry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class OtlpMetricsTest {
    static final long T = 1_760_000_000_123_000_000L;

    static byte[] push() {
        return OtlpWriter.metricsData(new OtlpWriter[] {
            OtlpWriter.stringAttribute("group_id", "orders"),
            OtlpWriter.stringAttribute("group_member_id", "consumer-1-abc"),
            OtlpWriter.stringAttribute("group_instance_id", ""),
            new OtlpWriter().stringField(1, "an_int").messageField(2, new OtlpWriter().varintField(3, 42))},
            OtlpWriter.gauge(MemberMetrics.LAST_HEARTBEAT, 2.0, T),
            OtlpWriter.gauge(MemberMetrics.LAST_POLL, 0.0, T),
            OtlpWriter.gauge(MemberMetrics.POLL_INTERVAL_MAX, 512.0, T),
            OtlpWriter.sum("org.apache.kafka.consumer.coordinator.heartbeat.total", 7, T),
            OtlpWriter.gauge(MemberMetrics.ASSIGNED_PARTITIONS, 3.0, T));
    }

    @Test
    void decodesResourceAttributesAndNumberPoints() {
        List<OtlpMetrics.Resource> rs = OtlpMetrics.decode(push());
        assertEquals(1, rs.size());
        OtlpMetrics.Resource r = rs.get(0);
        assertEquals("orders", r.attributes.get("group_id"));
        assertEquals("consumer-1-abc", r.attributes.get("group_member_id"));
        assertEquals("42", r.attributes.get("an_int"));
        assertEquals(2.0, r.metrics.get(MemberMetrics.LAST_HEARTBEAT).value);
        assertEquals(T, r.metrics.get(MemberMetrics.LAST_HEARTBEAT).timeUnixNano);
        assertEquals(7.0, r.metrics.get("org.apache.kafka.consumer.coordinator.heartbeat.total").value);
    }

    @Test
    void theResourceMetricsOfOneResourceAreOneResource() {
        OtlpWriter[] member = {OtlpWriter.stringAttribute("group_id", "g"), OtlpWriter.stringAttribute("group_member_id", "m")};
        byte[] a = OtlpWriter.metricsData(member, OtlpWriter.gauge(MemberMetrics.LAST_HEARTBEAT, 1.0, T));
        byte[] b = OtlpWriter.metricsData(member, OtlpWriter.gauge(MemberMetrics.LAST_POLL, 3.0, T));
        byte[] c = OtlpWriter.metricsData(new OtlpWriter[] {OtlpWriter.stringAttribute("group_id", "other")},
            OtlpWriter.gauge(MemberMetrics.LAST_POLL, 4.0, T));
        byte[] all = new byte[a.length + b.length + c.length];  // concatenated messages are their fields' union
        System.arraycopy(a, 0, all, 0, a.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        System.arraycopy(c, 0, all, a.length + b.length, c.length);
        List<OtlpMetrics.Resource> rs = OtlpMetrics.decode(all);
        assertEquals(2, rs.size());
        MemberMetrics m = MemberMetrics.of(rs.get(0).metrics);
        assertEquals(1.0, m.lastHeartbeatSecondsAgo);
        assertEquals(3.0, m.lastPollSecondsAgo);
        assertEquals("other", rs.get(1).attributes.get("group_id"));
    }

    @Test
    void picksTheMembersMetrics() {
        MemberMetrics m = MemberMetrics.of(OtlpMetrics.decode(push()).get(0).metrics);
        assertEquals(2.0, m.lastHeartbeatSecondsAgo);
        assertEquals(0.0, m.lastPollSecondsAgo);
        assertEquals(512.0, m.pollIntervalMaxMs);
        assertNull(m.pollIdleRatio);
    }

    @Test
    void clientMetricsEventIsCanonicalJson() {
        MemberMetrics m = MemberMetrics.of(OtlpMetrics.decode(push()).get(0).metrics);
        m.lastPollSecondsAgo = -1.0;  // Kafka's "no poll yet": left out
        String json = CanonicalEvents.clientMetrics(1000L, new Member("g\"1", "m-1", "", "c", "127.0.0.1"), m,
            CanonicalEvents.SOURCE_PUSH, 5000, "id", null, null);
        assertEquals("{\"v\":1,\"type\":\"client_metrics\",\"ts\":1000,\"group\":\"g\\\"1\",\"member_id\":\"m-1\","
            + "\"client_id\":\"c\",\"host\":\"127.0.0.1\",\"source\":\"kip714\",\"interval_ms\":5000,"
            + "\"client_instance_id\":\"id\",\"last_heartbeat_ms_ago\":2000,\"poll_interval_max_ms\":512,"
            + "\"assigned_partitions\":3}", json);
    }

    @Test
    void kip714NamesOfInProcessMetrics() {
        assertEquals(MemberMetrics.LAST_HEARTBEAT,
            MemberMetrics.otlpName("consumer-coordinator-metrics", "last-heartbeat-seconds-ago"));
        assertEquals(MemberMetrics.POLL_INTERVAL_MAX, MemberMetrics.otlpName("consumer-metrics", "time-between-poll-max"));
    }

    @Test
    void malformedInputIsRefused() {
        byte[] good = push();
        for (int cut : new int[] {1, 5, good.length / 2, good.length - 1}) {
            byte[] truncated = Arrays.copyOf(good, cut);
            assertThrows(IllegalArgumentException.class, () -> OtlpMetrics.decode(truncated), "cut at " + cut);
        }
        assertThrows(IllegalArgumentException.class, () -> OtlpMetrics.decode(new byte[] {0x0f}));
        assertTrue(OtlpMetrics.decode(new byte[0]).isEmpty());
    }
}
