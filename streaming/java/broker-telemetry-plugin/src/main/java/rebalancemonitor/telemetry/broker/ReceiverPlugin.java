package rebalancemonitor.telemetry.broker;

import org.apache.kafka.server.telemetry.ClientTelemetry;
import org.apache.kafka.server.telemetry.ClientTelemetryReceiver;

/**
 * The broker plugin for Kafka 3.7 to 4.1 (KIP-714's first interface pair, which 4.2+ still calls until 5.0):
 * {@code metric.reporters=rebalancemonitor.telemetry.broker.ReceiverPlugin}. It names no 4.2-only type, so it loads
 * on the older brokers.
 */
@SuppressWarnings({"deprecation", "removal"})
public class ReceiverPlugin extends ForwardingReporter implements ClientTelemetry {

    @Override
    public ClientTelemetryReceiver clientReceiver() {
        return (context, payload) -> forwarding.export(context, payload, -1);
    }
}
