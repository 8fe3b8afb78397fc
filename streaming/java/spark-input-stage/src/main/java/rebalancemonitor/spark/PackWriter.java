package rebalancemonitor.spark;

import java.util.Arrays;

/**
 * The JSON text of a pack, written straight into a byte array: lists, integers, strings and nulls, which is all a
 * pack holds (decoding/decoded_rows.py's {@code PACK_COLUMNS}: a list per column). Strings are written with an
 * escape for a quote, a backslash, a control character and every character above 127 ({@code \\uXXXX}, one per
 * UTF-16 unit), so the text is ASCII and any JSON reader gives back the very same string.
 */
final class PackWriter {
    private static final byte[] HEX = "0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final byte[] NULL = {'n', 'u', 'l', 'l'};
    private byte[] buf;
    private int len;
    // whether the next value of the list being written needs a comma before it
    private boolean comma;

    PackWriter(int capacity) {
        buf = new byte[Math.max(16, capacity)];
    }

    private void room(int n) {
        if (len + n > buf.length) {
            buf = Arrays.copyOf(buf, Math.max(buf.length * 2, len + n));
        }
    }

    private void separate() {
        if (comma) {
            room(1);
            buf[len++] = ',';
        }
        comma = true;
    }

    void open() {
        separate();
        room(1);
        buf[len++] = '[';
        comma = false;
    }

    void close() {
        room(1);
        buf[len++] = ']';
        comma = true;
    }

    void nul() {
        separate();
        room(4);
        System.arraycopy(NULL, 0, buf, len, 4);
        len += 4;
    }

    void number(long v) {
        separate();
        room(20);
        if (v < 0) {
            buf[len++] = '-';
            if (v == Long.MIN_VALUE) {  // (its magnitude is no long: its digits by hand)
                byte[] digits = "9223372036854775808".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
                System.arraycopy(digits, 0, buf, len, digits.length);
                len += digits.length;
                return;
            }
            v = -v;
        }
        int end = len + digits(v);
        for (int i = end - 1; i >= len; i--) {
            buf[i] = (byte) ('0' + v % 10);
            v /= 10;
        }
        len = end;
    }

    private static int digits(long v) {
        int n = 1;
        while (v >= 10) {
            v /= 10;
            n++;
        }
        return n;
    }

    /** A string, or null for a null one. */
    void string(String s) {
        if (s == null) {
            nul();
            return;
        }
        separate();
        int n = s.length();
        room(n + 2);
        buf[len++] = '"';
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\') {
                room(2);  // (this byte and the closing quote)
                buf[len++] = (byte) c;
            } else if (c == '"' || c == '\\') {
                room(3);
                buf[len++] = '\\';
                buf[len++] = (byte) c;
            } else {
                room(7);
                buf[len++] = '\\';
                buf[len++] = 'u';
                buf[len++] = HEX[(c >> 12) & 0xF];
                buf[len++] = HEX[(c >> 8) & 0xF];
                buf[len++] = HEX[(c >> 4) & 0xF];
                buf[len++] = HEX[c & 0xF];
            }
        }
        room(1);
        buf[len++] = '"';
    }

    /** The text of another writer's value (a list it closed), as the next value here. */
    void raw(PackWriter value) {
        separate();
        room(value.len);
        System.arraycopy(value.buf, 0, buf, len, value.len);
        len += value.len;
    }

    int length() {
        return len;
    }

    byte[] bytes() {
        return Arrays.copyOf(buf, len);
    }
}
