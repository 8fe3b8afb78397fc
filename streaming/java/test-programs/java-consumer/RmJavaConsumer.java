// A plain Java consumer (kafka-clients) for the workloads: joins a group, polls, commits, and prints what the
// client itself saw as JSON lines on stdout (its ground truth): every rebalance callback with the generation
// or member epoch and the assignment. Most production consumers are Java and are seen only through the
// broker: this is such a consumer, with no instrumentation of the project's inside it.
//
// Usage: java -cp libs/*:classes RmJavaConsumer key=value ...   (keys: bootstrap, group, topics (comma list),
//   client.id, assignor (range|roundrobin|sticky|cooperative-sticky|uniform|...), protocol (classic|consumer),
//   instance.id, session.timeout.ms, max.poll.interval.ms, poll.sleep.ms (after every poll),
//   stall.ms and stall.after.ms (one stall of stall.ms, stall.after.ms after its first partitions: a slow handler))
// It stops on end of stdin or SIGTERM, leaving the group (a SIGKILL leaves it to the session timeout).
import java.time.Duration;
import java.util.*;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class RmJavaConsumer {
    static final Map<String, String> ASSIGNORS = Map.of(
        "range", "org.apache.kafka.clients.consumer.RangeAssignor",
        "roundrobin", "org.apache.kafka.clients.consumer.RoundRobinAssignor",
        "sticky", "org.apache.kafka.clients.consumer.StickyAssignor",
        "cooperative-sticky", "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");

    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String parts(Collection<TopicPartition> tps) {
        List<String> out = new ArrayList<>();
        List<TopicPartition> sorted = new ArrayList<>(tps);
        sorted.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
        for (TopicPartition tp : sorted) out.add("[" + q(tp.topic()) + "," + tp.partition() + "]");
        return "[" + String.join(",", out) + "]";
    }

    static synchronized void emit(String kind, KafkaConsumer<?, ?> c, Collection<TopicPartition> tps, String extra) {
        String member = null;
        int generation = -1;
        try {
            ConsumerGroupMetadata m = c.groupMetadata();
            member = m.memberId();
            generation = m.generationId();
        } catch (RuntimeException e) { /* not in a group yet */ }
        System.out.println("{\"kind\":" + q(kind) + ",\"ts\":" + System.currentTimeMillis() + ",\"member_id\":"
            + q(member) + ",\"generation\":" + generation + ",\"partitions\":" + parts(tps) + extra + "}");
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> a = new HashMap<>();
        for (String arg : args) {
            int i = arg.indexOf('=');
            a.put(arg.substring(0, i), arg.substring(i + 1));
        }
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.get("bootstrap"));
        p.put(ConsumerConfig.GROUP_ID_CONFIG, a.get("group"));
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, a.getOrDefault("client.id", "rm-java"));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        String protocol = a.getOrDefault("protocol", "classic");
        p.put("group.protocol", protocol);
        String assignor = a.getOrDefault("assignor", "range");
        if (protocol.equals("consumer")) {
            if (a.containsKey("assignor")) p.put("group.remote.assignor", assignor);
        } else {
            p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, ASSIGNORS.getOrDefault(assignor, assignor));
            p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, a.getOrDefault("session.timeout.ms", "10000"));
            p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG,
                  String.valueOf(Math.max(100, Integer.parseInt(a.getOrDefault("session.timeout.ms", "10000")) / 5)));
        }
        p.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, a.getOrDefault("max.poll.interval.ms", "300000"));
        if (a.containsKey("instance.id")) p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, a.get("instance.id"));
        long pollSleep = Long.parseLong(a.getOrDefault("poll.sleep.ms", "0"));
        long stallMs = Long.parseLong(a.getOrDefault("stall.ms", "0"));
        long stallAfterMs = Long.parseLong(a.getOrDefault("stall.after.ms", "1000"));

        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p);
        AtomicBoolean running = new AtomicBoolean(true);
        Thread main = Thread.currentThread();
        Runnable stop = () -> { running.set(false); consumer.wakeup(); };
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            stop.run();
            try { main.join(10000); } catch (InterruptedException e) { /* exiting */ }
        }));
        Thread stdin = new Thread(() -> {
            try { while (System.in.read() >= 0) { } } catch (Exception e) { /* closed */ }
            stop.run();
        });
        stdin.setDaemon(true);
        stdin.start();

        consumer.subscribe(Arrays.asList(a.get("topics").split(",")), new ConsumerRebalanceListener() {
            public void onPartitionsRevoked(Collection<TopicPartition> tps) { emit("revoked", consumer, tps, ""); }
            public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                emit("assigned", consumer, tps, ",\"assignment\":" + parts(consumer.assignment()));
            }
            public void onPartitionsLost(Collection<TopicPartition> tps) { emit("lost", consumer, tps, ""); }
        });
        emit("started", consumer, List.of(), ",\"client_id\":" + q(p.getProperty(ConsumerConfig.CLIENT_ID_CONFIG)));
        long firstPartitionsAt = -1;
        boolean stalled = false;
        int lastEpoch = -1;
        try {
            while (running.get()) {
                ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                if (!records.isEmpty()) consumer.commitSync();
                if (pollSleep > 0) Thread.sleep(pollSleep);
                if (firstPartitionsAt < 0 && !consumer.assignment().isEmpty()) firstPartitionsAt = System.currentTimeMillis();
                if (protocol.equals("consumer")) {
                    // KIP-848: the member epoch moves with every group epoch the member reconciles to, and the
                    // rebalance callbacks run only when its partitions change: print each new epoch
                    int epoch = consumer.groupMetadata().generationId();
                    if (epoch != lastEpoch && epoch > 0) {
                        lastEpoch = epoch;
                        emit("epoch", consumer, consumer.assignment(), ",\"assignment\":" + parts(consumer.assignment()));
                    }
                }
                if (stallMs > 0 && !stalled && firstPartitionsAt >= 0
                        && System.currentTimeMillis() - firstPartitionsAt >= stallAfterMs) {
                    stalled = true;
                    emit("stall", consumer, List.of(), ",\"stall_ms\":" + stallMs);
                    Thread.sleep(stallMs);  // no poll: past max.poll.interval.ms the client leaves the group
                }
            }
        } catch (WakeupException e) {
            // stopping
        } finally {
            consumer.close(Duration.ofSeconds(5));
            emit("closed", consumer, List.of(), "");
        }
    }
}
