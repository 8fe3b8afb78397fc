package rebalancemonitor.telemetry;

/**
 * A minimal reader of the protobuf wire format (varint, 64-bit, length-delimited and 32-bit fields), enough to walk
 * an OTLP {@code MetricsData} message without a protobuf library on the broker's class path.
 * Malformed input raises {@link IllegalArgumentException}; callers count it and go on.
 */
final class ProtoReader {
    static final int VARINT = 0;
    static final int FIXED64 = 1;
    static final int LEN = 2;
    static final int FIXED32 = 5;

    private final byte[] buf;
    private int pos;
    private final int limit;

    ProtoReader(byte[] buf, int offset, int length) {
        if (offset < 0 || length < 0 || offset + length > buf.length) {
            throw new IllegalArgumentException("bounds");
        }
        this.buf = buf;
        this.pos = offset;
        this.limit = offset + length;
    }

    ProtoReader(byte[] buf) {
        this(buf, 0, buf.length);
    }

    boolean more() {
        return pos < limit;
    }

    /** The next field's tag (field number << 3 | wire type). */
    int tag() {
        long t = varint();
        if (t <= 0 || t > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("bad tag " + t);
        }
        return (int) t;
    }

    static int field(int tag) {
        return tag >>> 3;
    }

    static int wireType(int tag) {
        return tag & 7;
    }

    long varint() {
        long result = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos >= limit) {
                throw new IllegalArgumentException("truncated varint");
            }
            byte b = buf[pos++];
            result |= (long) (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return result;
            }
        }
        throw new IllegalArgumentException("varint too long");
    }

    long fixed64() {
        need(8);
        long v = 0;
        for (int i = 7; i >= 0; i--) {
            v = (v << 8) | (buf[pos + i] & 0xffL);
        }
        pos += 8;
        return v;
    }

    int fixed32() {
        need(4);
        int v = 0;
        for (int i = 3; i >= 0; i--) {
            v = (v << 8) | (buf[pos + i] & 0xff);
        }
        pos += 4;
        return v;
    }

    double doubleValue() {
        return Double.longBitsToDouble(fixed64());
    }

    /** A length-delimited field's bytes as a reader of their own (the field's tag already read). */
    ProtoReader message() {
        int len = length();
        ProtoReader sub = new ProtoReader(buf, pos, len);
        pos += len;
        return sub;
    }

    String string() {
        int len = length();
        String s = new String(buf, pos, len, java.nio.charset.StandardCharsets.UTF_8);
        pos += len;
        return s;
    }

    /** Skip the value of a field of this wire type. */
    void skip(int wireType) {
        switch (wireType) {
            case VARINT: varint(); break;
            case FIXED64: need(8); pos += 8; break;
            case LEN: { int len = length(); pos += len; break; }
            case FIXED32: need(4); pos += 4; break;
            default: throw new IllegalArgumentException("unsupported wire type " + wireType);
        }
    }

    private int length() {
        long len = varint();
        if (len < 0 || len > limit - pos) {
            throw new IllegalArgumentException("bad length " + len);
        }
        return (int) len;
    }

    private void need(int n) {
        if (limit - pos < n) {
            throw new IllegalArgumentException("truncated");
        }
    }
}
