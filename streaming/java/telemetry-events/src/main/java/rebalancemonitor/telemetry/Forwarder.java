package rebalancemonitor.telemetry;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.HashMap;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Work off the caller's thread: {@link #offer} never blocks (a full bounded queue drops and counts); one daemon
 * thread runs each unit of work (decoding, on the broker) and produces the events it gives, keyed by group, with
 * its own producer. The counters are a JMX MBean under the name given.
 */
public final class Forwarder implements AutoCloseable, ForwarderStatsMXBean {
    /** One unit of work, run on the forwarder's thread: the events to send as [key (the group), JSON] pairs. */
    public interface Work {
        List<String[]> events(Forwarder counters) throws Exception;
    }

    private static final Logger log = LoggerFactory.getLogger(Forwarder.class);

    private final ForwarderConfig config;
    private final BlockingQueue<Work> queue;
    private final Thread thread;
    private final ObjectName mbeanName;
    private volatile boolean running = true;
    private Producer<String, String> producer;
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong dropped = new AtomicLong();
    private final AtomicLong produced = new AtomicLong();
    private final AtomicLong sent = new AtomicLong();
    private final AtomicLong sendErrors = new AtomicLong();
    private final AtomicLong decodeErrors = new AtomicLong();
    private final AtomicLong ignored = new AtomicLong();
    private final AtomicLong callerNanos = new AtomicLong();
    private final AtomicLong callerCalls = new AtomicLong();
    private final AtomicLong callerNanosMax = new AtomicLong();

    public Forwarder(ForwarderConfig config, String mbeanName, String threadName) {
        this.config = config;
        this.queue = new ArrayBlockingQueue<>(config.queueCapacity);
        this.mbeanName = register(mbeanName);
        this.thread = new Thread(this::run, threadName);
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /** Queue one unit of work; false (counted as dropped) when the queue is full. Never blocks, never throws. */
    public boolean offer(Work work) {
        if (running && queue.offer(work)) {
            accepted.incrementAndGet();
            return true;
        }
        dropped.incrementAndGet();
        return false;
    }

    public void countDecodeError() {
        decodeErrors.incrementAndGet();
    }

    public void countIgnored() {
        ignored.incrementAndGet();
    }

    /** Time a caller spent handing over one unit of work (the broker's request thread, per push): two counters and
     * a max, no allocation. */
    public void countCallerTime(long nanos) {
        callerNanos.addAndGet(nanos);
        callerCalls.incrementAndGet();
        long max = callerNanosMax.get();
        while (nanos > max && !callerNanosMax.compareAndSet(max, nanos)) {
            max = callerNanosMax.get();
        }
    }

    private void run() {
        try {
            producer = newProducer();
        } catch (RuntimeException e) {
            log.error("rebalance monitor: cannot create the events producer; events are dropped", e);
        }
        while (running || !queue.isEmpty()) {
            Work work;
            try {
                work = queue.poll(200, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                break;
            }
            if (work == null) {
                continue;
            }
            List<String[]> events;
            try {
                events = work.events(this);
            } catch (Exception e) {
                decodeErrors.incrementAndGet();
                continue;
            }
            for (String[] ev : events) {
                send(ev[0], ev[1]);
            }
        }
    }

    private void send(String key, String json) {
        produced.incrementAndGet();
        if (producer == null) {
            sendErrors.incrementAndGet();
            return;
        }
        try {
            producer.send(new ProducerRecord<>(config.topic, key, json), (md, err) -> {
                if (err == null) {
                    sent.incrementAndGet();
                } else {
                    sendErrors.incrementAndGet();
                }
            });
        } catch (RuntimeException e) {  // e.g. no metadata within max.block.ms: the cluster is down
            sendErrors.incrementAndGet();
        }
    }

    private Producer<String, String> newProducer() {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, config.bootstrapServers);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, "rebalance-monitor-telemetry");
        props.put(ProducerConfig.LINGER_MS_CONFIG, 50);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
        props.put(ProducerConfig.ACKS_CONFIG, "1");
        props.put("enable.metrics.push", false);  // its own pushes would only be ignored
        props.putAll(config.producerOverrides);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        // the plugin's classes and the producer's must come from the same loader (the broker's, or the client's)
        ClassLoader previous = Thread.currentThread().getContextClassLoader();
        Thread.currentThread().setContextClassLoader(null);
        try {
            return new KafkaProducer<>(props);
        } finally {
            Thread.currentThread().setContextClassLoader(previous);
        }
    }

    @Override
    public void close() {
        running = false;
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (producer != null) {
            producer.close(Duration.ofSeconds(5));
        }
        if (mbeanName != null) {
            try {
                ManagementFactory.getPlatformMBeanServer().unregisterMBean(mbeanName);
            } catch (Exception e) {
                // already gone
            }
        }
    }

    private ObjectName register(String name) {
        try {
            MBeanServer server = ManagementFactory.getPlatformMBeanServer();
            ObjectName on = new ObjectName(name);
            if (server.isRegistered(on)) {
                server.unregisterMBean(on);
            }
            server.registerMBean(this, on);
            return on;
        } catch (Exception e) {
            log.warn("rebalance monitor: cannot register the MBean {}", name, e);
            return null;
        }
    }

    @Override public long getAccepted() { return accepted.get(); }
    @Override public long getDropped() { return dropped.get(); }
    @Override public long getEventsProduced() { return produced.get(); }
    @Override public long getEventsSent() { return sent.get(); }
    @Override public long getSendErrors() { return sendErrors.get(); }
    @Override public long getDecodeErrors() { return decodeErrors.get(); }
    @Override public long getIgnored() { return ignored.get(); }
    @Override public int getQueued() { return queue.size(); }
    @Override public long getCallerNanosTotal() { return callerNanos.get(); }
    @Override public long getCallerCalls() { return callerCalls.get(); }
    @Override public long getCallerNanosMax() { return callerNanosMax.get(); }
}
