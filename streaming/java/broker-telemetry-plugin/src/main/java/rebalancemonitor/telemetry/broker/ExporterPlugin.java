package rebalancemonitor.telemetry.broker;

import org.apache.kafka.server.telemetry.ClientTelemetryExporter;
import org.apache.kafka.server.telemetry.ClientTelemetryExporterProvider;

/**
 * The broker plugin for Kafka 4.2 and later (KIP-1217): {@code metric.reporters=rebalancemonitor.telemetry.broker.ExporterPlugin}.
 * Brokers 3.7 to 4.1 take {@link ReceiverPlugin} from the same jar.
 */
public class ExporterPlugin extends ForwardingReporter implements ClientTelemetryExporterProvider {

    @Override
    public ClientTelemetryExporter clientTelemetryExporter() {
        return (context, payload) -> forwarding.export(context.authorizableRequestContext(), payload,
            context.pushIntervalMs());
    }
}
