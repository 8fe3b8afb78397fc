package rebalancemonitor.telemetry.broker;

import java.util.List;
import java.util.Map;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.MetricsReporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

/**
 * The broker plugin for Kafka 4.2 and later (KIP-1217): {@code metric.reporters=rebalancemonitor.telemetry.broker.ExporterPlugin}.
 * Brokers 3.7 to 4.1 take {@link ReceiverPlugin} from the same jar.
 */
public class ExporterPlugin implements MetricsReporter, ClientTelemetryExporterProvider {
    private final PushForwarding forwarding = new PushForwarding();

    @Override
    public void configure(Map<String, ?> configs) {
        forwarding.configure(configs);
    }

    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return (context, payload) -> forwarding.export(context.authorizableRequestContext(), payload,
            context.pushIntervalMs());
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
