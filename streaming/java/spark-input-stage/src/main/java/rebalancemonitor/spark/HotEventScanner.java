package rebalancemonitor.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A reader of the one shape that almost every heartbeat, poll and commit has: one JSON object of the keys the fast
 * path knows, whose strings are printable ASCII without escapes, whose numbers are plain integers of at most 18
 * digits, and whose other values are null or a commit's offsets. It reads those bytes directly, without a general
 * parser and without a String per key.
 *
 * <p>It never refuses a record: on anything outside that shape (an escape, a byte above 127, a float, a literal
 * other than null, an unknown or repeated key, a malformed offset entry, trailing content) it answers "not sure" and
 * {@link HotEvent} reads the record again with Jackson. What it does read, it reads exactly as Jackson would, so the
 * same fields meet the same checks ({@code HotEventScannerTest} holds the two readers equal over random texts).
 */
final class HotEventScanner {
    private static final byte[][] KEYS = new byte[HotEvent.KEYS.length][];
    private static final Object NOT_SURE = new Object();
    private static final int MAX_DIGITS = 18;

    static {
        for (int i = 0; i < KEYS.length; i++) {
            KEYS[i] = HotEvent.KEYS[i].getBytes(StandardCharsets.US_ASCII);
        }
    }

    private final byte[] b;
    private int at;

    private HotEventScanner(byte[] b) {
        this.b = b;
    }

    /** Read {@code value} into {@code f}: true when it had the plain shape (then {@code f} holds what Jackson's
     * reading would hold), false when not sure. */
    static boolean scan(byte[] value, HotEvent.Fields f) {
        return new HotEventScanner(value).object(f);
    }

    private boolean object(HotEvent.Fields f) {
        if (!skipTo((byte) '{')) {
            return false;
        }
        while (true) {
            if (next() != '"') {
                return false;  // (an empty object too: Jackson decides)
            }
            int bit = key();
            if (bit == 0 || !skipTo((byte) ':')) {
                return false;
            }
            if (bit == HotEvent.OFFSETS) {
                List<Object[]> offsets = offsets();
                if (offsets == null || !f.putOffsets(offsets)) {
                    return false;
                }
            } else {
                Object x = value();
                if (x == NOT_SURE || !f.put(bit, x)) {
                    return false;
                }
            }
            int c = next();
            if (c == '}') {
                return next() == -1;  // nothing after the object but white space
            }
            if (c != ',') {
                return false;
            }
        }
    }

    /** The next byte that is not JSON white space, consumed; -1 at the end. */
    private int next() {
        byte[] b = this.b;
        int i = at;
        while (i < b.length) {
            byte c = b[i++];
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') {
                at = i;
                return c;
            }
        }
        at = i;
        return -1;
    }

    private boolean skipTo(byte c) {
        return next() == c;
    }

    /** After an opening quote: the end of a plain string (the index of its closing quote), or -1. */
    private int plainStringEnd() {
        byte[] b = this.b;
        for (int i = at; i < b.length; i++) {
            byte c = b[i];
            if (c == '"') {
                return i;
            }
            if (c < 0x20 || c == '\\') {  // (bytes above 127 are negative)
                return -1;
            }
        }
        return -1;
    }

    /** After an opening quote: the key's bit, or 0 (not a plain string, or not a key the fast path knows). */
    private int key() {
        int end = plainStringEnd();
        if (end < 0) {
            return 0;
        }
        int start = at, len = end - start;
        at = end + 1;
        for (int k = 0; k < KEYS.length; k++) {
            byte[] name = KEYS[k];
            if (name.length == len && sameBytes(name, start)) {
                return 1 << k;
            }
        }
        return 0;
    }

    private boolean sameBytes(byte[] name, int start) {
        for (int i = 0; i < name.length; i++) {
            if (b[start + i] != name[i]) {
                return false;
            }
        }
        return true;
    }

    /** A plain string, a plain integer (a Long) or null; NOT_SURE for anything else. */
    private Object value() {
        int c = next();
        if (c == '"') {
            int end = plainStringEnd();
            if (end < 0) {
                return NOT_SURE;
            }
            String s = new String(b, at, end - at, StandardCharsets.ISO_8859_1);  // ASCII: one char per byte
            at = end + 1;
            return s;
        }
        if (c == 'n') {
            if (at + 3 <= b.length && b[at] == 'u' && b[at + 1] == 'l' && b[at + 2] == 'l') {
                at += 3;
                return endOfValue() ? null : NOT_SURE;
            }
            return NOT_SURE;
        }
        if (c == '-' || (c >= '0' && c <= '9')) {
            at--;
            return integer();
        }
        return NOT_SURE;
    }

    /** Whether the byte after a literal or a number may follow a value (so "nullx" or "12a" is not taken). */
    private boolean endOfValue() {
        if (at >= b.length) {
            return true;
        }
        byte c = b[at];
        return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\n' || c == '\r' || c == '\t';
    }

    private Object integer() {
        byte[] b = this.b;
        int i = at;
        boolean negative = b[i] == '-';
        if (negative) {
            i++;
        }
        int first = i;
        long v = 0;
        while (i < b.length && b[i] >= '0' && b[i] <= '9') {
            v = v * 10 + (b[i] - '0');
            i++;
        }
        int digits = i - first;
        if (digits == 0 || digits > MAX_DIGITS || (digits > 1 && b[first] == '0') || (negative && v == 0)) {
            return NOT_SURE;  // no digits, too long to be sure of, a leading zero, minus zero
        }
        at = i;
        if (!endOfValue()) {
            return NOT_SURE;  // a fraction, an exponent, or anything else glued on
        }
        return negative ? -v : v;
    }

    /** A commit's offsets: [[topic, partition, offset], ...] with the fast path's ranges; null when not sure. */
    private List<Object[]> offsets() {
        if (next() != '[') {
            return null;
        }
        List<Object[]> out = new ArrayList<>();
        int c = next();
        if (c == ']') {
            return out;
        }
        while (true) {
            if (c != '[') {
                return null;
            }
            Object topic = value();
            if (topic == NOT_SURE || next() != ',') {
                return null;
            }
            Object partition = value();
            if (partition == NOT_SURE || next() != ',') {
                return null;
            }
            Object offset = value();
            if (offset == NOT_SURE || next() != ']') {
                return null;
            }
            Object[] entry = HotEvent.offsetEntry(topic, partition, offset);
            if (entry == null) {
                return null;
            }
            out.add(entry);
            c = next();
            if (c == ']') {
                return out;
            }
            if (c != ',') {
                return null;
            }
            c = next();
        }
    }
}
