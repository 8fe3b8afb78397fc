package rebalancemonitor.telemetry;

import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.common.config.ConfigException;

/**
 * The plugins' settings, read from the broker's (or the consumer's) own properties under {@code rebalance.monitor.}:
 * <ul>
 *   <li>{@code rebalance.monitor.bootstrap.servers}: where the events topic is (the client reporter defaults to the
 *   consumer's own bootstrap.servers; the broker plugin requires it);</li>
 *   <li>{@code rebalance.monitor.events.topic}: the monitor's events topic (default rebalance-events);</li>
 *   <li>{@code rebalance.monitor.queue.capacity}: events waiting to be sent, beyond which they are dropped and
 *   counted (default 10000, 1 .. 1000000);</li>
 *   <li>{@code rebalance.monitor.interval.ms}: the client reporter's snapshot period (default 5000, 100 .. 3600000);</li>
 *   <li>{@code rebalance.monitor.producer.*}: any producer setting (security.protocol, sasl.*, ssl.*, ...).</li>
 * </ul>
 * A bad value fails at start with a ConfigException naming the key and what it allows.
 */
public final class ForwarderConfig {
    public static final String PREFIX = "rebalance.monitor.";
    public static final String BOOTSTRAP = PREFIX + "bootstrap.servers";
    public static final String TOPIC = PREFIX + "events.topic";
    public static final String QUEUE = PREFIX + "queue.capacity";
    public static final String INTERVAL = PREFIX + "interval.ms";
    public static final String PRODUCER = PREFIX + "producer.";
    public static final String DEFAULT_TOPIC = "rebalance-events";

    public final String bootstrapServers;
    public final String topic;
    public final int queueCapacity;
    public final int intervalMs;
    public final Map<String, Object> producerOverrides;

    private ForwarderConfig(String bootstrapServers, String topic, int queueCapacity, int intervalMs,
                            Map<String, Object> producerOverrides) {
        this.bootstrapServers = bootstrapServers;
        this.topic = topic;
        this.queueCapacity = queueCapacity;
        this.intervalMs = intervalMs;
        this.producerOverrides = producerOverrides;
    }

    /** Read the settings; {@code fallbackBootstrap} is used when the key is absent (null: the key is required). */
    public static ForwarderConfig from(Map<String, ?> configs, String fallbackBootstrap) {
        String bootstrap = string(configs, BOOTSTRAP, fallbackBootstrap);
        if (bootstrap == null || bootstrap.isBlank()) {
            throw new ConfigException(BOOTSTRAP, null,
                "the Kafka cluster of the monitor's events topic is required (host:port,...)");
        }
        String topic = string(configs, TOPIC, DEFAULT_TOPIC);
        if (topic.isBlank()) {
            throw new ConfigException(TOPIC, topic, "a topic name is required");
        }
        int queue = integer(configs, QUEUE, 10_000, 1, 1_000_000);
        int interval = integer(configs, INTERVAL, 5_000, 100, 3_600_000);
        Map<String, Object> producer = new HashMap<>();
        for (Map.Entry<String, ?> e : configs.entrySet()) {
            if (e.getKey().startsWith(PRODUCER) && e.getValue() != null) {
                producer.put(e.getKey().substring(PRODUCER.length()), e.getValue());
            }
        }
        return new ForwarderConfig(bootstrap.trim(), topic.trim(), queue, interval, producer);
    }

    private static String string(Map<String, ?> configs, String key, String fallback) {
        Object v = configs.get(key);
        if (v == null) {
            return fallback;
        }
        if (v instanceof java.util.List) {
            return String.join(",", ((java.util.List<?>) v).stream().map(String::valueOf).toArray(String[]::new));
        }
        return String.valueOf(v);
    }

    private static int integer(Map<String, ?> configs, String key, int fallback, int min, int max) {
        Object v = configs.get(key);
        if (v == null) {
            return fallback;
        }
        long n;
        try {
            n = Long.parseLong(String.valueOf(v).trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(key, v, "an integer from " + min + " to " + max + " is required");
        }
        if (n < min || n > max) {
            throw new ConfigException(key, v, "an integer from " + min + " to " + max + " is required");
        }
        return (int) n;
    }
}
