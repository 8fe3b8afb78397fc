package rebalancemonitor.telemetry;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An OTLP {@code MetricsData} message (opentelemetry/proto/metrics/v1/metrics.proto) read down to what the monitor
 * uses: per resource, its string attributes and, per metric name, the value and time of its latest number data point
 * (gauge or sum). Histograms, summaries and exemplars are skipped.
 */
public final class OtlpMetrics {
    /**
     * One number data point: its value and its time (Unix nanoseconds; 0 when the client sent none); {@code delta}
     * when it is a point of a Sum with delta temporality (the change since the client's previous push).
     */
    public static final class Point {
        public final double value;
        public final long timeUnixNano;
        public final boolean delta;

        Point(double value, long timeUnixNano) {
            this(value, timeUnixNano, false);
        }

        Point(double value, long timeUnixNano, boolean delta) {
            this.value = value;
            this.timeUnixNano = timeUnixNano;
            this.delta = delta;
        }
    }

    /** AggregationTemporality DELTA (Sum field 2). */
    private static final long TEMPORALITY_DELTA = 1;

    /** One {@code ResourceMetrics}: the resource's attributes and its metrics' latest points by name. */
    public static final class Resource {
        public final Map<String, String> attributes = new HashMap<>();
        public final Map<String, Point> metrics = new HashMap<>();
    }

    private OtlpMetrics() {
    }

    /**
     * Decode a MetricsData message; IllegalArgumentException when it is not well-formed protobuf. The
     * ResourceMetrics of one resource (the Java client sends one per metric) are merged into one.
     */
    public static List<Resource> decode(byte[] data) {
        Map<Map<String, String>, Resource> byAttributes = new LinkedHashMap<>();
        ProtoReader r = new ProtoReader(data);
        while (r.more()) {
            int tag = r.tag();
            if (ProtoReader.field(tag) == 1 && ProtoReader.wireType(tag) == ProtoReader.LEN) {
                Resource res = resourceMetrics(r.message());
                Resource same = byAttributes.putIfAbsent(res.attributes, res);
                if (same != null) {
                    for (Map.Entry<String, Point> e : res.metrics.entrySet()) {
                        Point old = same.metrics.get(e.getKey());
                        if (old == null || e.getValue().timeUnixNano >= old.timeUnixNano) {
                            same.metrics.put(e.getKey(), e.getValue());
                        }
                    }
                }
            } else {
                r.skip(ProtoReader.wireType(tag));
            }
        }
        return new ArrayList<>(byAttributes.values());
    }

    private static Resource resourceMetrics(ProtoReader r) {
        Resource res = new Resource();
        while (r.more()) {
            int tag = r.tag();
            int f = ProtoReader.field(tag);
            if (f == 1 && ProtoReader.wireType(tag) == ProtoReader.LEN) {
                resource(r.message(), res.attributes);
            } else if (f == 2 && ProtoReader.wireType(tag) == ProtoReader.LEN) {
                scopeMetrics(r.message(), res.metrics);
            } else {
                r.skip(ProtoReader.wireType(tag));
            }
        }
        return res;
    }

    private static void resource(ProtoReader r, Map<String, String> attributes) {
        while (r.more()) {
            int tag = r.tag();
            if (ProtoReader.field(tag) == 1 && ProtoReader.wireType(tag) == ProtoReader.LEN) {
                keyValue(r.message(), attributes);
            } else {
                r.skip(ProtoReader.wireType(tag));
            }
        }
    }

    /** KeyValue {1: key, 2: AnyValue}; AnyValue {1: string, 2: bool, 3: int64, 4: double}; others skipped. */
    private static void keyValue(ProtoReader r, Map<String, String> into) {
        String key = null;
        String value = null;
        while (r.more()) {
            int tag = r.tag();
            int f = ProtoReader.field(tag);
            if (f == 1 && ProtoReader.wireType(tag) == ProtoReader.LEN) {
                key = r.string();
            } else if (f == 2 && ProtoReader.wireType(tag) == ProtoReader.LEN) {
                value = anyValue(r.message());
            } else {
                r.skip(ProtoReader.wireType(tag));
            }
        }
        if (key != null && value != null) {
            into.put(key, value);
        }
    }

    private static String anyValue(ProtoReader r) {
        String out = null;
        while (r.more()) {
            int tag = r.tag();
            int f = ProtoReader.field(tag);
            int wt = ProtoReader.wireType(tag);
            if (f == 1 && wt == ProtoReader.LEN) {
                out = r.string();
            } else if (f == 2 && wt == ProtoReader.VARINT) {
                out = r.varint() != 0 ? "true" : "false";
            } else if (f == 3 && wt == ProtoReader.VARINT) {
                out = Long.toString(r.varint());
            } else if (f == 4 && wt == ProtoReader.FIXED64) {
                out = Double.toString(r.doubleValue());
            } else {
                r.skip(wt);
            }
        }
        return out;
    }

    private static void scopeMetrics(ProtoReader r, Map<String, Point> metrics) {
        while (r.more()) {
            int tag = r.tag();
            if (ProtoReader.field(tag) == 2 && ProtoReader.wireType(tag) == ProtoReader.LEN) {
                metric(r.message(), metrics);
            } else {
                r.skip(ProtoReader.wireType(tag));
            }
        }
    }

    /** Metric {1: name, 5: Gauge, 7: Sum}; Gauge and Sum hold NumberDataPoints in field 1, Sum its temporality in 2. */
    private static void metric(ProtoReader r, Map<String, Point> metrics) {
        String name = null;
        Point latest = null;
        boolean delta = false;
        while (r.more()) {
            int tag = r.tag();
            int f = ProtoReader.field(tag);
            if (f == 1 && ProtoReader.wireType(tag) == ProtoReader.LEN) {
                name = r.string();
            } else if ((f == 5 || f == 7) && ProtoReader.wireType(tag) == ProtoReader.LEN) {
                ProtoReader points = r.message();
                while (points.more()) {
                    int t = points.tag();
                    if (ProtoReader.field(t) == 1 && ProtoReader.wireType(t) == ProtoReader.LEN) {
                        Point p = numberDataPoint(points.message());
                        if (p != null && (latest == null || p.timeUnixNano >= latest.timeUnixNano)) {
                            latest = p;
                        }
                    } else if (f == 7 && ProtoReader.field(t) == 2 && ProtoReader.wireType(t) == ProtoReader.VARINT) {
                        delta = points.varint() == TEMPORALITY_DELTA;
                    } else {
                        points.skip(ProtoReader.wireType(t));
                    }
                }
            } else {
                r.skip(ProtoReader.wireType(tag));
            }
        }
        if (name != null && latest != null) {
            metrics.put(name, delta ? new Point(latest.value, latest.timeUnixNano, true) : latest);
        }
    }

    /** NumberDataPoint {3: time_unix_nano fixed64, 4: as_double, 6: as_int sfixed64}. */
    private static Point numberDataPoint(ProtoReader r) {
        long time = 0;
        Double value = null;
        while (r.more()) {
            int tag = r.tag();
            int f = ProtoReader.field(tag);
            int wt = ProtoReader.wireType(tag);
            if (f == 3 && wt == ProtoReader.FIXED64) {
                time = r.fixed64();
            } else if (f == 4 && wt == ProtoReader.FIXED64) {
                value = r.doubleValue();
            } else if (f == 6 && wt == ProtoReader.FIXED64) {
                value = (double) r.fixed64();
            } else {
                r.skip(wt);
            }
        }
        return value == null ? null : new Point(value, time);
    }
}
