package rebalancemonitor.telemetry.broker;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

/**
 * The broker plugin for Kafka 3.7 to 4.1 (KIP-714's first interface pair, which 4.2+ still calls until 5.0):
 * {@code metric.reporters=rebalancemonitor.telemetry.broker.ReceiverPlugin}. It names no 4.2-only type, so it loads
 * on the older brokers.
 */
@SuppressWarnings({"deprecation", "removal"})
public class ReceiverPlugin implements MetricsReporter, ClientTelemetry {
    private final PushForwarding forwarding = new PushForwarding();

    @Override
    public void configure(Map<String, ?> configs) {
        forwarding.configure(configs);
    }

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return (context, payload) -> forwarding.export(context, payload, -1);
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
