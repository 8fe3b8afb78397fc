package rebalancemonitor.testapp;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.Stores;

/**
 * A test application (not shipped): a stateless Kafka Streams topology, {@code input.topic} upper-cased to
 * {@code output.topic}, or with {@code topology=count} a stateful one (each key's count, in an in-memory state
 * store with a changelog, so that a group with standby replicas assigns standby tasks), with the Streams properties of the file named by the first argument ({@code application.id},
 * {@code bootstrap.servers}, {@code num.stream.threads}, {@code main.consumer.*}, {@code metric.reporters}, ...).
 * Nothing in it knows of the monitor: whatever watches it comes through its configuration or the broker.
 *
 * <p>On SIGTERM it closes; {@code leave.group.on.close=true} (the default here) closes with
 * {@link CloseOptions.GroupMembershipOperation#LEAVE_GROUP}, {@code false} with Streams' own default (a dynamic
 * member stays in the group until its session times out).
 */
public final class StreamsTestApp {
    private StreamsTestApp() {
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        Properties props = new Properties();
        if (args.length > 0) {
            try (InputStream in = new FileInputStream(args[0])) {
                props.load(in);
            }
        }
        String input = (String) props.remove("input.topic");
        String output = (String) props.remove("output.topic");
        boolean leave = Boolean.parseBoolean((String) props.getOrDefault("leave.group.on.close", "true"));
        props.remove("leave.group.on.close");
        String topology = (String) props.getOrDefault("topology", "uppercase");
        props.remove("topology");
        if (input == null || output == null) {
            throw new IllegalArgumentException("input.topic and output.topic are required");
        }
        props.putIfAbsent(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        props.putIfAbsent(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());

        StreamsBuilder builder = new StreamsBuilder();
        if ("count".equals(topology)) {
            // an in-memory store (this jar leaves RocksDB's native library out), logged to a changelog as any
            builder.<String, String>stream(input).groupByKey()
                .count(Materialized.as(Stores.inMemoryKeyValueStore("counts"))).toStream()
                .mapValues(String::valueOf).to(output);
        } else if ("uppercase".equals(topology)) {
            builder.<String, String>stream(input).mapValues(v -> v == null ? null : v.toUpperCase()).to(output);
        } else {
            throw new IllegalArgumentException("topology must be uppercase or count: " + topology);
        }
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        CountDownLatch done = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            CloseOptions how = CloseOptions.groupMembershipOperation(leave
                ? CloseOptions.GroupMembershipOperation.LEAVE_GROUP : CloseOptions.GroupMembershipOperation.DEFAULT)
                .withTimeout(Duration.ofSeconds(30));
            streams.close(how);
            done.countDown();
        }, "streams-test-app-close"));
        streams.start();
        System.out.println("streams-test-app started");
        done.await();
    }
}
