package rebalancemonitor.spark;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import org.junit.jupiter.api.Test;

/** The byte-level reader of the plain shape reads what Jackson reads, wherever it is sure; the pack writer's text
 * reads back as the values written. */
class HotEventScannerTest {
    private static final String[] STRINGS = {"\"g\"", "\"member-1\"", "\"\"", "\"a b\"", "\"q\\\"x\"", "\"b\\\\s\"",
        "\"\\u0041\"", "\"\\n\"", "\"é\"", "\"\u4e2d\"", "\"\\ud800\"", "\"x\u007fy\"", "\"tab\there\"", "\"REBALANCE\"",
        "\"heartbeat\"", "\"poll\"", "\"commit\"", "\"join\"", "\"t\"", "\"unterminated"};
    private static final String[] NUMBERS = {"0", "1", "-1", "7", "1700000000000", "-0", "01", "1.0", "1e3", "2E2",
        "123456789012345678", "1234567890123456789", "99999999999999999999", "-9007199254740992",
        "9007199254740991", "12a", "-", "5 "};
    private static final String[] OTHERS = {"null", "true", "false", "nul", "nullx", "[]", "{}", "[1]", "{\"a\":1}"};
    private static final String[] KEYS = {"v", "type", "ts", "group", "member_id", "generation", "error", "records",
        "offsets", "group_instance_id", "client_id", "host", "extra", "t\\u0073", "Type", ""};
    private static final String[] SPACE = {" ", "\n", "\t ", "\r\n", "\u00a0", "\u000b"};

    private static String pick(Random r, String[] xs) {
        if (xs == SPACE) {  // mostly none, sometimes JSON's white space, seldom what JSON does not call white space
            int k = r.nextInt(40);
            return k < 30 ? "" : k < 39 ? SPACE[r.nextInt(4)] : SPACE[4 + r.nextInt(2)];
        }
        return xs[r.nextInt(xs.length)];
    }

    private static String scalar(Random r) {
        return switch (r.nextInt(3)) {
            case 0 -> pick(r, STRINGS);
            case 1 -> pick(r, NUMBERS);
            default -> pick(r, OTHERS);
        };
    }

    private static String offsets(Random r) {
        if (r.nextInt(12) == 0) {
            return scalar(r);
        }
        List<String> entries = new ArrayList<>();
        for (int i = r.nextInt(4); i > 0; i--) {
            String[] parts = {r.nextInt(4) == 0 ? pick(r, STRINGS) : "\"t\"", r.nextInt(4) == 0 ? pick(r, NUMBERS) : "3",
                r.nextInt(4) == 0 ? pick(r, NUMBERS) : "42"};
            if (r.nextInt(8) == 0) {
                parts[r.nextInt(3)] = scalar(r);
            }
            List<String> ps = new ArrayList<>(Arrays.asList(parts));
            if (r.nextInt(12) == 0) {
                ps.remove(0);
            }
            entries.add(pick(r, SPACE) + "[" + String.join(pick(r, SPACE) + "," + pick(r, SPACE), ps) + "]");
        }
        return "[" + String.join(",", entries) + pick(r, SPACE) + "]";
    }

    /** A random object near the fast path's events: mostly well formed, often with one thing off. */
    private static String text(Random r) {
        String type = r.nextInt(10) == 0 ? scalar(r) : "\"" + new String[] {"heartbeat", "poll", "commit"}[r.nextInt(3)] + "\"";
        List<String> fields = new ArrayList<>(List.of("\"v\":" + (r.nextInt(8) == 0 ? scalar(r) : "1"),
                "\"type\":" + type, "\"ts\":" + (r.nextInt(6) == 0 ? scalar(r) : "1700000000123"),
                "\"group\":" + (r.nextInt(6) == 0 ? scalar(r) : "\"g1\""),
                "\"member_id\":" + (r.nextInt(6) == 0 ? scalar(r) : "\"m-1\"")));
        for (int i = r.nextInt(3) == 0 ? r.nextInt(5) : 0; i > 0; i--) {
            String key = pick(r, KEYS);
            fields.add("\"" + key + "\":" + ("offsets".equals(key) ? offsets(r) : scalar(r)));
        }
        if (r.nextInt(3) == 0) {
            fields.add("\"offsets\":" + offsets(r));
        }
        Collections.shuffle(fields, r);
        StringBuilder s = new StringBuilder(pick(r, SPACE)).append('{');
        for (int i = 0; i < fields.size(); i++) {
            if (i > 0) {
                s.append(pick(r, SPACE)).append(',');
            }
            String f = fields.get(i);
            int colon = f.indexOf("\":") + 1;
            s.append(pick(r, SPACE)).append(f, 0, colon).append(pick(r, SPACE)).append(':').append(pick(r, SPACE))
                    .append(f.substring(colon + 1));
        }
        s.append(pick(r, SPACE)).append('}').append(pick(r, SPACE));
        switch (r.nextInt(25)) {
            case 0 -> s.append("{}");
            case 1 -> s.setLength(Math.max(0, s.length() - 1 - r.nextInt(6)));
            case 2 -> s.append("x");
            default -> { }
        }
        return s.toString();
    }

    private static List<Object> fields(HotEvent.Fields f) {
        List<Object> out = new ArrayList<>(Arrays.asList(f.seen, f.v, f.type, f.ts, f.group, f.member, f.num, f.err,
                f.records, f.inst, f.client, f.host));
        if (f.offsets != null) {
            for (Object[] e : f.offsets) {
                out.add(Arrays.asList(e));
            }
        }
        return out;
    }

    @Test
    void whereTheScannerIsSureItReadsWhatJacksonReads() {
        Random r = new Random(714);
        int sure = 0, taken = 0, n = 200_000;
        for (int i = 0; i < n; i++) {
            String t = text(r);
            byte[] value = t.getBytes(StandardCharsets.UTF_8);
            HotEvent.Fields scanned = new HotEvent.Fields();
            if (!HotEventScanner.scan(value, scanned)) {
                continue;
            }
            sure++;
            HotEvent.Fields read = new HotEvent.Fields();
            assertTrue(HotEvent.readWithJackson(value, read), t);
            assertEquals(fields(read), fields(scanned), t);
            if (HotEvent.of(scanned, 1_800_000_000_000L, -1) != null) {
                taken++;
            }
        }
        // the random texts reach both sides: many read by the scanner (events taken and refused), many left to Jackson
        assertTrue(sure > n / 10 && sure < n * 9 / 10, "sure of " + sure);
        assertTrue(taken > n / 50, "taken " + taken);
    }

    @Test
    void theCommonShapesAreReadWithoutJackson() {
        for (String t : List.of(
                "{\"v\":1,\"type\":\"heartbeat\",\"ts\":5,\"group\":\"g\",\"member_id\":\"m\",\"generation\":3,"
                        + "\"error\":null,\"client_id\":\"c\",\"host\":\"/127.0.0.1\"}",
                " { \"type\" : \"poll\" , \"v\":1,\"ts\":6,\"group\":\"g\",\"member_id\":\"m\",\"records\":-12 }\n",
                "{\"v\":1,\"type\":\"commit\",\"ts\":7,\"group\":\"g\",\"member_id\":\"m\",\"offsets\":[[\"t\",0,12],"
                        + " [\"t\", 1, -1]],\"generation\":null}",
                "{\"v\":1,\"type\":\"commit\",\"ts\":7,\"group\":\"g\",\"member_id\":\"\",\"offsets\":[ ]}")) {
            HotEvent.Fields f = new HotEvent.Fields();
            assertTrue(HotEventScanner.scan(t.getBytes(StandardCharsets.UTF_8), f), t);
        }
        for (String t : List.of("{\"v\":1,\"ts\":1.5}", "{\"v\":1,\"group\":\"\\u0067\"}", "{\"v\":1,\"group\":\"é\"}",
                "{\"v\":1,\"v\":1}", "{}", "{\"v\":1} x", "{\"v\":true}", "{\"v\":-0}", "{\"v\":1234567890123456789}")) {
            assertFalse(HotEventScanner.scan(t.getBytes(StandardCharsets.UTF_8), new HotEvent.Fields()), t);
        }
    }

    @Test
    void thePackWritersTextReadsBackAsWritten() throws Exception {
        Random r = new Random(848);
        JsonFactory json = new JsonFactory();
        for (int round = 0; round < 2_000; round++) {
            PackWriter w = new PackWriter(r.nextInt(40));
            List<Object> written = new ArrayList<>();
            w.open();
            for (int i = r.nextInt(30); i > 0; i--) {
                switch (r.nextInt(4)) {
                    case 0 -> {
                        long v = switch (r.nextInt(4)) {
                            case 0 -> r.nextLong();
                            case 1 -> Long.MIN_VALUE;
                            case 2 -> r.nextInt(20) - 10;
                            default -> Long.MAX_VALUE;
                        };
                        w.number(v);
                        written.add(v);
                    }
                    case 1 -> {
                        w.nul();
                        written.add(null);
                    }
                    case 2 -> {
                        StringBuilder s = new StringBuilder();
                        for (int k = r.nextInt(12); k > 0; k--) {
                            s.append((char) (r.nextInt(3) == 0 ? r.nextInt(0x3000) : 0x20 + r.nextInt(0x60)));
                        }
                        w.string(s.toString());
                        written.add(s.toString());
                    }
                    default -> {
                        w.open();
                        w.number(i);
                        w.close();
                        written.add(List.of((long) i));
                    }
                }
            }
            w.close();
            byte[] text = w.bytes();
            for (byte b : text) {
                assertTrue(b >= 0x20 && b < 0x7F, "ASCII only");
            }
            List<Object> read = new ArrayList<>();
            try (JsonParser p = json.createParser(text)) {
                assertEquals(JsonToken.START_ARRAY, p.nextToken());
                JsonToken t;
                while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
                    switch (t) {
                        case VALUE_NUMBER_INT -> read.add(p.getLongValue());
                        case VALUE_NULL -> read.add(null);
                        case VALUE_STRING -> read.add(p.getText());
                        case START_ARRAY -> {
                            p.nextToken();
                            read.add(List.of(p.getLongValue()));
                            assertEquals(JsonToken.END_ARRAY, p.nextToken());
                        }
                        default -> throw new AssertionError(t);
                    }
                }
                assertEquals(null, p.nextToken());
            }
            assertEquals(written, read);
        }
        assertArrayEquals("[]".getBytes(StandardCharsets.US_ASCII), emptyList());
    }

    private static byte[] emptyList() {
        PackWriter w = new PackWriter(0);
        w.open();
        w.close();
        return w.bytes();
    }
}
