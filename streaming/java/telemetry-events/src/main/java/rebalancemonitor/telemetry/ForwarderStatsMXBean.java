package rebalancemonitor.telemetry;

/** The forwarder's counters as a JMX MBean (the broker's and the client's own metrics are read over JMX). */
public interface ForwarderStatsMXBean {
    /** Units of work accepted (pushes for the broker plugin, snapshots for the reporter). */
    long getAccepted();

    /** Units of work dropped because the queue was full (or the forwarder closed). */
    long getDropped();

    /** Events handed to the producer. */
    long getEventsProduced();

    /** Events the broker acknowledged. */
    long getEventsSent();

    /** Events the producer failed to deliver. */
    long getSendErrors();

    /** Payloads that were not a well-formed OTLP message. */
    long getDecodeErrors();

    /** Pushes of clients that are not group members (producers, admin clients): nothing to forward. */
    long getIgnored();

    /** Units of work waiting now. */
    int getQueued();

    /** Nanoseconds the callers spent in the plugin, in all (the broker plugin: the request-handler thread's time per
     * push, from the call to the return, copying and offering included). */
    long getCallerNanosTotal();

    /** Calls timed in {@link #getCallerNanosTotal()}. */
    long getCallerCalls();

    /** The longest single call, in nanoseconds. */
    long getCallerNanosMax();
}
