package rebalancemonitor.spark;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Set;

import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The frequent events of the canonical events topic (heartbeats, polls, offset commits) read and packed per group
 * in the JVM, before the job's Python decode stage (spark/jvm_packing.py): Python then receives one row per group
 * and chunk, in the pack format of its own decode stage (decoding/decoded_rows.py, {@code PACK_COLUMNS}: a JSON list
 * per column), instead of a row per event it would parse itself.
 *
 * <p>Which records are packed is {@link HotEvent}'s call, the Python fast path's checks; every other record (other
 * topics, other event types, anything in doubt, the job's wake-up records) passes as it came. Nothing is decided
 * here. A pack row keeps the input's columns (its topic and partition; the offset and Kafka timestamp of the record
 * of its newest event; no key or value) and fills {@value #GROUP_COLUMN}, {@value #PACK_COLUMN} and
 * {@value #TS_COLUMN} (its newest event time); {@value #RECORDS_COLUMN} counts the records a row stands for, and is
 * kept from the input where an earlier stage (CommitCompaction) set it. Packs are handed on every
 * {@code packRecords} packed records and at the end of the partition, so memory stays bounded.
 */
public final class EventPacking {
    public static final String RECORDS_COLUMN = CommitCompaction.RECORDS_COLUMN;
    public static final String GROUP_COLUMN = "rm_group";
    public static final String PACK_COLUMN = "rm_pack";
    public static final String TS_COLUMN = "rm_ts";
    static final byte[] WAKE_KEY = "rebalance-monitor/wake".getBytes(java.nio.charset.StandardCharsets.UTF_8);

    private EventPacking() {
    }

    /**
     * The Kafka rows {@code raw} (topic, partition, offset, timestamp, key, value, and perhaps rm_records) with the
     * frequent events of {@code eventTopics} (comma-separated) packed per group and chunk.
     */
    public static Dataset<Row> apply(Dataset<Row> raw, String eventTopics, int maxBytes, long maxFutureMs,
                                     int packRecords) {
        StructType in = raw.schema();
        boolean counted = Arrays.asList(in.fieldNames()).contains(RECORDS_COLUMN);
        StructType out = counted ? in : in.add(RECORDS_COLUMN, DataTypes.IntegerType, false);
        out = out.add(GROUP_COLUMN, DataTypes.StringType, true).add(PACK_COLUMN, DataTypes.BinaryType, true)
                .add(TS_COLUMN, DataTypes.LongType, true);
        int[] at = {in.fieldIndex("topic"), in.fieldIndex("partition"), in.fieldIndex("offset"),
            in.fieldIndex("timestamp"), in.fieldIndex("key"), in.fieldIndex("value")};
        Packer f = new Packer(in.length(), counted ? in.fieldIndex(RECORDS_COLUMN) : -1, at,
                new HashSet<>(Arrays.asList(eventTopics.split(","))), maxBytes, maxFutureMs, packRecords);
        return raw.mapPartitions(f, Encoders.row(out));
    }

    static final class Packer implements MapPartitionsFunction<Row, Row> {
        private static final long serialVersionUID = 1L;
        private final int width;
        private final boolean counted;
        private final int countIdx;
        private final int topicIdx;
        private final int partitionIdx;
        private final int offsetIdx;
        private final int timestampIdx;
        private final int keyIdx;
        private final int valueIdx;
        private final Set<String> topics;
        private final int maxBytes;
        private final long maxFutureMs;
        private final int packRecords;

        /** {@code countIdx}: the input's rm_records column, or -1; {@code at}: its topic, partition, offset,
         * timestamp, key and value columns. */
        Packer(int width, int countIdx, int[] at, Set<String> topics, int maxBytes, long maxFutureMs, int packRecords) {
            this.width = width;
            this.counted = countIdx >= 0;
            this.countIdx = countIdx;
            this.topicIdx = at[0];
            this.partitionIdx = at[1];
            this.offsetIdx = at[2];
            this.timestampIdx = at[3];
            this.keyIdx = at[4];
            this.valueIdx = at[5];
            this.topics = topics;
            this.maxBytes = maxBytes;
            this.maxFutureMs = maxFutureMs;
            this.packRecords = Math.max(1, packRecords);
        }

        @Override
        public Iterator<Row> call(Iterator<Row> rows) {
            return new Packed(rows, System.currentTimeMillis());
        }

        /** A row passed as it came: its columns, its count, and no pack. */
        private Row passed(Row r) {
            Object[] values = new Object[width + (counted ? 3 : 4)];
            for (int i = 0; i < width; i++) {
                values[i] = r.get(i);
            }
            if (!counted) {
                values[width] = 1;
            }
            return RowFactory.create(values);
        }

        private Row packRow(Pack p) {
            Object[] values = new Object[width + (counted ? 3 : 4)];
            Row newest = p.newestRow;
            values[topicIdx] = newest.get(topicIdx);
            values[partitionIdx] = newest.get(partitionIdx);
            values[offsetIdx] = newest.get(offsetIdx);
            values[timestampIdx] = newest.get(timestampIdx);
            int at = width;
            if (counted) {
                values[countIdx] = p.records;
            } else {
                values[at++] = p.records;
            }
            values[at++] = p.group;
            values[at++] = p.json();
            values[at] = p.newestTs;
            return RowFactory.create(values);
        }

        private final class Packed extends RowQueue {
            private final Iterator<Row> rows;
            private final long nowMs;
            private final LinkedHashMap<String, Pack> packs = new LinkedHashMap<>();
            private int held;

            Packed(Iterator<Row> rows, long nowMs) {
                this.rows = rows;
                this.nowMs = nowMs;
            }

            private void flush() {
                for (Pack p : packs.values()) {
                    ready.add(packRow(p));
                }
                packs.clear();
                held = 0;
            }

            @Override
            protected void fill() {
                while (ready.isEmpty() && rows.hasNext()) {
                    Row r = rows.next();
                    HotEvent e = null;
                    if (topics.contains(r.getString(topicIdx)) && !Arrays.equals(WAKE_KEY, (byte[]) r.get(keyIdx))) {
                        e = HotEvent.parse((byte[]) r.get(valueIdx), maxBytes, nowMs, maxFutureMs);
                    }
                    if (e == null) {
                        ready.add(passed(r));
                        continue;
                    }
                    Pack p = packs.computeIfAbsent(e.group, Pack::new);
                    long order = ((long) r.getInt(partitionIdx) << 40) | r.getLong(offsetIdx);
                    p.add(e, order, r, counted ? r.getInt(countIdx) : 1);
                    if (++held >= packRecords) {
                        flush();
                    }
                }
                if (ready.isEmpty() && !packs.isEmpty()) {
                    flush();
                }
            }
        }
    }

    /**
     * One group's packed events, written column by column as they come (the JSON of each column's list, so a held
     * event costs its text, not its objects), and the record of its newest event.
     */
    static final class Pack {
        // the columns, in the Python decode stage's PACK_COLUMNS order
        private static final int TS = 0, ORDER = 1, ETYPE = 2, MEMBER = 3, NUM = 4, ERR = 5, INST = 6, CLIENT = 7,
            HOST = 8, OFFSETS = 9, COLUMNS = 10;
        final String group;
        private final PackWriter[] columns = new PackWriter[COLUMNS];
        int records;
        long newestTs = Long.MIN_VALUE;
        Row newestRow;

        Pack(String group) {
            this.group = group;
            for (int i = 0; i < COLUMNS; i++) {
                columns[i] = new PackWriter(i == TS || i == ORDER ? 256 : 64);
                columns[i].open();
            }
        }

        void add(HotEvent e, long order, Row r, int count) {
            PackWriter[] c = columns;
            c[TS].number(e.ts);
            c[ORDER].number(order);
            c[ETYPE].string(e.etype);
            c[MEMBER].string(e.member);
            if (e.num == null) {
                c[NUM].nul();
            } else {
                c[NUM].number(e.num);
            }
            c[ERR].string(e.err);
            c[INST].string(e.inst);
            c[CLIENT].string(e.client);
            c[HOST].string(e.host);
            PackWriter w = c[OFFSETS];
            if (e.offsets == null) {
                w.nul();
            } else {
                w.open();
                for (Object[] tpo : e.offsets) {
                    w.open();
                    w.string((String) tpo[0]);
                    w.number((Long) tpo[1]);
                    w.number((Long) tpo[2]);
                    w.close();
                }
                w.close();
            }
            records += count;
            if (newestRow == null || e.ts > newestTs) {  // the first record of the highest time, as Python keeps it
                newestTs = e.ts;
                newestRow = r;
            }
        }

        /** The events as the Python decode stage packs them: [[ts...], [ord...], [etype...], [member...], [num...],
         * [err...], [inst...], [client...], [host...], [offsets or null...]]. Once only: it closes the columns. */
        byte[] json() {
            int size = 2 + COLUMNS;
            for (PackWriter column : columns) {
                column.close();
                size += column.length();
            }
            PackWriter w = new PackWriter(size);
            w.open();
            for (PackWriter column : columns) {
                w.raw(column);
            }
            w.close();
            return w.bytes();
        }
    }
}
