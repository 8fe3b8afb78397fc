package rebalancemonitor.telemetry;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** A protobuf writer for the tests, written from the wire format's definition, not from the reader. */
public final class OtlpWriter {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    public OtlpWriter varintField(int field, long v) {
        tag(field, 0);
        varint(v);
        return this;
    }

    public OtlpWriter fixed64Field(int field, long v) {
        tag(field, 1);
        for (int i = 0; i < 8; i++) {
            out.write((int) (v >>> (8 * i)) & 0xff);
        }
        return this;
    }

    public OtlpWriter doubleField(int field, double v) {
        return fixed64Field(field, Double.doubleToLongBits(v));
    }

    public OtlpWriter stringField(int field, String s) {
        return bytesField(field, s.getBytes(StandardCharsets.UTF_8));
    }

    public OtlpWriter messageField(int field, OtlpWriter m) {
        return bytesField(field, m.bytes());
    }

    public OtlpWriter bytesField(int field, byte[] b) {
        tag(field, 2);
        varint(b.length);
        out.write(b, 0, b.length);
        return this;
    }

    public byte[] bytes() {
        return out.toByteArray();
    }

    private void tag(int field, int wireType) {
        varint(((long) field << 3) | wireType);
    }

    private void varint(long v) {
        while ((v & ~0x7fL) != 0) {
            out.write((int) ((v & 0x7f) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }

    // --- OTLP shapes (opentelemetry/proto/metrics/v1) ------------------------------------------------
    public static OtlpWriter stringAttribute(String key, String value) {
        return new OtlpWriter().stringField(1, key).messageField(2, new OtlpWriter().stringField(1, value));
    }

    public static OtlpWriter gauge(String name, double value, long timeNanos) {
        OtlpWriter point = new OtlpWriter().fixed64Field(2, timeNanos - 1).fixed64Field(3, timeNanos)
            .doubleField(4, value).messageField(7, stringAttribute("client_software_name", "apache-kafka-java"));
        return new OtlpWriter().stringField(1, name).stringField(2, "a description")
            .messageField(5, new OtlpWriter().messageField(1, point));
    }

    public static OtlpWriter sum(String name, long value, long timeNanos) {
        OtlpWriter point = new OtlpWriter().fixed64Field(3, timeNanos).fixed64Field(6, value);
        return new OtlpWriter().stringField(1, name)
            .messageField(7, new OtlpWriter().messageField(1, point).varintField(2, 1).varintField(3, 1));
    }

    /** MetricsData with one ResourceMetrics holding these attributes and metrics. */
    public static byte[] metricsData(OtlpWriter[] attributes, OtlpWriter... metrics) {
        OtlpWriter resource = new OtlpWriter();
        for (OtlpWriter a : attributes) {
            resource.messageField(1, a);
        }
        OtlpWriter scope = new OtlpWriter().messageField(1, new OtlpWriter().stringField(1, "scope"));
        for (OtlpWriter m : metrics) {
            scope.messageField(2, m);
        }
        OtlpWriter rm = new OtlpWriter().messageField(1, resource).messageField(2, scope).stringField(3, "schema");
        return new OtlpWriter().messageField(1, rm).bytes();
    }
}
