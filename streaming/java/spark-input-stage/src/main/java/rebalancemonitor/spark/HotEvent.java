package rebalancemonitor.spark;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;

/**
 * A heartbeat, poll or offset commit of the canonical events topic, read in the JVM with exactly the checks of the
 * Python decode stage's fast path (decoding/event_columns.py, {@code hot_fields}): the fields it carries as columns, or
 * {@code null} whenever that path would not take the record (a key it does not know, a number it would not carry,
 * a value of another type, anything it is not sure of). Such records go to Python as they came, where the full
 * parser decides. Nothing is decided here: a record this class refuses is never rejected by it.
 *
 * <p>Stricter than Python where the two readers of JSON could differ: a duplicated key, a string with a surrogate
 * code unit, trailing content and a byte-order mark all send the record to Python.
 */
public final class HotEvent {
    static final long NUM_LIMIT = 1L << 53;
    static final int SCHEMA_VERSION = 1;
    private static final JsonFactory JSON = new JsonFactory();

    public final String etype;
    public final long ts;
    public final String group;
    public final String member;
    public final Long num;
    public final String err;
    public final String inst;
    public final String client;
    public final String host;
    /** A commit's offsets: [topic, partition, offset] each; null for the others. */
    public final List<Object[]> offsets;

    private HotEvent(String etype, long ts, String group, String member, Long num, String err, String inst,
                     String client, String host, List<Object[]> offsets) {
        this.etype = etype;
        this.ts = ts;
        this.group = group;
        this.member = member;
        this.num = num;
        this.err = err;
        this.inst = inst;
        this.client = client;
        this.host = host;
        this.offsets = offsets;
    }

    // the keys the fast path knows, one bit each
    static final String[] KEYS = {"v", "type", "ts", "group", "member_id", "generation", "error", "records",
        "offsets", "group_instance_id", "client_id", "host"};
    static final int V = 1, TYPE = 1 << 1, TS = 1 << 2, GROUP = 1 << 3, MEMBER = 1 << 4, GENERATION = 1 << 5,
        ERROR = 1 << 6, RECORDS = 1 << 7, OFFSETS = 1 << 8, INST = 1 << 9, CLIENT = 1 << 10, HOST = 1 << 11;
    private static final int COMMON = V | TYPE | TS | GROUP | MEMBER;
    private static final int IDENTITY = INST | CLIENT | HOST;

    /** A value read for a key: what the Python fast path would hold there (null stands for JSON null). */
    private static final Object NOT_CARRIED = new Object();

    /**
     * The event in {@code value} (UTF-8 JSON), or null. {@code nowMs} and {@code maxFutureMs}: an event more than
     * that far ahead of now goes to Python (which rejects it); a negative {@code maxFutureMs} checks nothing. An
     * event with an arrival time ({@code received_ms}, which may become its time in Python) is never read here: it
     * is a key the fast path does not know.
     *
     * <p>The common shape (ASCII strings without escapes, plain integers) is read by {@link HotEventScanner}; a
     * record it is not sure of is read again with Jackson. Either way the same fields meet the same checks.
     */
    public static HotEvent parse(byte[] value, int maxBytes, long nowMs, long maxFutureMs) {
        if (value == null || value.length > maxBytes || value.length == 0 || (value[0] & 0xFF) == 0xEF) {
            return null;
        }
        Fields f = new Fields();
        if (!HotEventScanner.scan(value, f)) {
            f = new Fields();
            if (!readWithJackson(value, f)) {
                return null;
            }
        }
        return of(f, nowMs, maxFutureMs);
    }

    /** Jackson's reading of {@code value} into {@code f}; false for anything the fast path would not take. */
    static boolean readWithJackson(byte[] value, Fields f) {
        try (JsonParser p = JSON.createParser(value)) {
            return read(p, f);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** The keys of one JSON object, as read: which were given, and their values. */
    static final class Fields {
        int seen;
        Object v, type, ts, group, member, num, err, records, inst, client, host;
        List<Object[]> offsets;

        /** Hold {@code x} for the key {@code bit} (not OFFSETS); false when the key was given before. */
        boolean put(int bit, Object x) {
            if ((seen & bit) != 0) {
                return false;
            }
            seen |= bit;
            switch (bit) {
                case V -> v = x;
                case TYPE -> type = x;
                case TS -> ts = x;
                case GROUP -> group = x;
                case MEMBER -> member = x;
                case GENERATION -> num = x;
                case ERROR -> err = x;
                case RECORDS -> records = x;
                case INST -> inst = x;
                case CLIENT -> client = x;
                default -> host = x;
            }
            return true;
        }

        boolean putOffsets(List<Object[]> list) {
            if ((seen & OFFSETS) != 0) {
                return false;
            }
            seen |= OFFSETS;
            offsets = list;
            return true;
        }
    }

    private static boolean read(JsonParser p, Fields f) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            return false;
        }
        JsonToken t;
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            int bit = bitOf(p.currentName());
            if (bit == 0) {
                return false;  // a key the fast path does not know
            }
            p.nextToken();
            if (bit == OFFSETS) {
                List<Object[]> offsets = offsetsOf(p);
                if (offsets == null || !f.putOffsets(offsets)) {
                    return false;
                }
                continue;
            }
            Object x = scalar(p);
            if (x == NOT_CARRIED || !f.put(bit, x)) {
                return false;  // a value it would not carry, or a key given twice
            }
        }
        return t == JsonToken.END_OBJECT && p.nextToken() == null;  // one object alone
    }

    /** The event the fields make, after the fast path's checks of keys, types and ranges; or null. */
    static HotEvent of(Fields f, long nowMs, long maxFutureMs) {
        int seen = f.seen;
        if ((seen & COMMON) != COMMON || !(f.type instanceof String etype)) {
            return null;
        }
        Object num = f.num, err = f.err, records = f.records;
        int allowed;
        int required;
        Long n;
        String error = null;
        switch (etype) {
            case "heartbeat" -> {
                allowed = COMMON | GENERATION | ERROR | IDENTITY;
                required = COMMON | GENERATION | ERROR;
                if (!(num instanceof Long g) || !(err == null || err instanceof String)) {
                    return null;
                }
                n = g;
                error = (String) err;
            }
            case "poll" -> {
                allowed = COMMON | RECORDS | IDENTITY;
                required = COMMON;
                if (records != null && !(records instanceof Long)) {
                    return null;
                }
                n = (Long) records;
            }
            case "commit" -> {
                allowed = COMMON | OFFSETS | GENERATION | IDENTITY;
                required = COMMON | OFFSETS;
                if (num != null && !(num instanceof Long)) {
                    return null;
                }
                n = (Long) num;
            }
            default -> {
                return null;
            }
        }
        if ((seen & ~allowed) != 0 || (seen & required) != required) {
            return null;
        }
        if (n != null && !(-NUM_LIMIT < n && n < NUM_LIMIT)) {
            return null;
        }
        if (!(f.v instanceof Long version) || version != SCHEMA_VERSION || !(f.ts instanceof Long time)
                || time < 0 || time >= NUM_LIMIT) {
            return null;
        }
        if (maxFutureMs >= 0 && time > nowMs + maxFutureMs) {
            return null;
        }
        if (!(f.group instanceof String g) || g.isEmpty() || !(f.member instanceof String m)) {
            return null;  // (a heartbeat or poll without a group takes the full path)
        }
        Object inst = f.inst, client = f.client, host = f.host;
        if ((inst != null && !(inst instanceof String)) || (client != null && !(client instanceof String))
                || (host != null && !(host instanceof String))) {
            return null;
        }
        return new HotEvent(etype, time, g, m, n, error, (String) inst, (String) client, (String) host,
                "commit".equals(etype) ? f.offsets : null);
    }

    /** One entry of a commit's offsets as the fast path takes it ([topic, 0 <= partition < 2^53, |offset| <
     * 2^53]), or null. */
    static Object[] offsetEntry(Object topic, Object partition, Object offset) {
        if (!(topic instanceof String) || !(partition instanceof Long part) || !(offset instanceof Long off)
                || part < 0 || part >= NUM_LIMIT || off <= -NUM_LIMIT || off >= NUM_LIMIT) {
            return null;
        }
        return new Object[] {topic, part, off};
    }

    private static int bitOf(String key) {
        for (int i = 0; i < KEYS.length; i++) {
            if (KEYS[i].equals(key)) {
                return 1 << i;
            }
        }
        return 0;
    }

    /** A string, an integer Python reads exactly (a long), or null; NOT_CARRIED for anything else. */
    private static Object scalar(JsonParser p) throws IOException {
        switch (p.currentToken()) {
            case VALUE_NULL:
                return null;
            case VALUE_STRING: {
                String s = p.getText();
                for (int i = 0; i < s.length(); i++) {
                    if (Character.isSurrogate(s.charAt(i))) {
                        return NOT_CARRIED;
                    }
                }
                return s;
            }
            case VALUE_NUMBER_INT:
                if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                    return NOT_CARRIED;
                }
                return p.getLongValue();
            default:
                return NOT_CARRIED;  // true/false, floats, objects, arrays
        }
    }

    /** A commit's offsets as the fast path takes them: a list of [topic, 0 <= partition < 2^53, |offset| < 2^53]. */
    private static List<Object[]> offsetsOf(JsonParser p) throws IOException {
        if (p.currentToken() != JsonToken.START_ARRAY) {
            return null;
        }
        List<Object[]> out = new ArrayList<>();
        while (p.nextToken() == JsonToken.START_ARRAY) {
            p.nextToken();
            Object topic = scalar(p);
            p.nextToken();
            Object partition = scalar(p);
            p.nextToken();
            Object offset = scalar(p);
            Object[] entry = p.nextToken() == JsonToken.END_ARRAY ? offsetEntry(topic, partition, offset) : null;
            if (entry == null) {
                return null;
            }
            out.add(entry);
        }
        return p.currentToken() == JsonToken.END_ARRAY ? out : null;
    }
}
