package rebalancemonitor.telemetry.broker;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;

/**
 * What both broker plugins are as a {@code metric.reporters} class: configured by the broker's properties, closed
 * with the broker; the broker's own metrics are of no interest to them. Each subclass adds one KIP-714 interface
 * pair, and both hand the pushes to {@link PushForwarding}. It names no KIP-714 type, so it loads on every broker.
 */
public abstract class ForwardingReporter implements MetricsReporter {
    protected final PushForwarding forwarding = new PushForwarding();

    @Override
    public void configure(Map<String, ?> configs) {
        forwarding.configure(configs);
    }

    @Override
    public void init(List<KafkaMetric> metrics) {
    }

    @Override
    public void metricChange(KafkaMetric metric) {
    }

    @Override
    public void metricRemoval(KafkaMetric metric) {
    }

    @Override
    public void close() {
        forwarding.close();
    }
}
