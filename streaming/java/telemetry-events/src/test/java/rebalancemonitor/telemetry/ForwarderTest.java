package rebalancemonitor.telemetry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import javax.management.ObjectName;
import org.apache.kafka.common.config.ConfigException;
import org.junit.jupiter.api.Test;

class ForwarderTest {
    @Test
    void aFullQueueDropsAndCountsWithoutBlockingAndTheCountsAreAnMBean() throws Exception {
        ForwarderConfig config = ForwarderConfig.from(
            Map.of(ForwarderConfig.BOOTSTRAP, "127.0.0.1:1", ForwarderConfig.QUEUE, "1"), null);
        String name = "kafka.server:type=rebalance-monitor-telemetry-test";
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (Forwarder f = new Forwarder(config, name, "test-forwarder")) {
            assertTrue(f.offer(counters -> {  // holds the forwarder's thread
                started.countDown();
                release.await();
                return Collections.<String[]>emptyList();
            }));
            assertTrue(started.await(30, TimeUnit.SECONDS));
            assertTrue(f.offer(counters -> Collections.<String[]>emptyList()));  // fills the queue of one
            assertFalse(f.offer(counters -> Collections.<String[]>emptyList()));
            assertFalse(f.offer(counters -> Collections.<String[]>emptyList()));
            assertEquals(2L, f.getDropped());
            assertEquals(2L, f.getAccepted());
            Object dropped = ManagementFactory.getPlatformMBeanServer().getAttribute(new ObjectName(name), "Dropped");
            assertEquals(2L, dropped);
            release.countDown();
        }
        assertFalse(ManagementFactory.getPlatformMBeanServer().isRegistered(new ObjectName(name)));
    }

    @Test
    void workThatFailsIsCountedAsADecodeError() throws Exception {
        ForwarderConfig config = ForwarderConfig.from(Map.of(ForwarderConfig.BOOTSTRAP, "127.0.0.1:1"), null);
        Forwarder f = new Forwarder(config, "kafka.server:type=rebalance-monitor-telemetry-test2", "test-forwarder");
        f.offer(counters -> {
            throw new IllegalArgumentException("truncated");
        });
        f.close();  // drains the queue first
        assertEquals(1L, f.getDecodeErrors());
    }

    @Test
    void badSettingsFailNamingTheKey() {
        ConfigException missing = assertThrows(ConfigException.class, () -> ForwarderConfig.from(Map.of(), null));
        assertTrue(missing.getMessage().contains(ForwarderConfig.BOOTSTRAP), missing.getMessage());
        ConfigException range = assertThrows(ConfigException.class, () -> ForwarderConfig.from(
            Map.of(ForwarderConfig.BOOTSTRAP, "h:1", ForwarderConfig.QUEUE, "0"), null));
        assertTrue(range.getMessage().contains(ForwarderConfig.QUEUE) && range.getMessage().contains("1 to 1000000"),
            range.getMessage());
        ForwarderConfig fallback = ForwarderConfig.from(Map.of("rebalance.monitor.producer.security.protocol", "SSL"),
            "c:9092");
        assertEquals("c:9092", fallback.bootstrapServers);
        assertEquals(ForwarderConfig.DEFAULT_TOPIC, fallback.topic);
        assertEquals(Map.of("security.protocol", "SSL"), fallback.producerOverrides);
    }
}
