package rebalancemonitor.spark;

import java.nio.ByteBuffer;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The live offset commits of {@code __consumer_offsets} compacted where the Kafka connector's rows are, before the
 * job's Python decode stage sees them (the rule of the Python side, decoding/input_commits.py, applied over a
 * whole Spark partition: one Kafka partition's records of a batch, in offset order).
 *
 * <p>An OffsetCommit record (key version 0 or 1) with a value is held by its raw key, a later one of the same key
 * replacing it; every other record of the offsets topic (group metadata, a commit's tombstone, KIP-848 records)
 * first lets the held commits through, in the order of their last records, then passes itself; records of other
 * topics pass as they come. Nothing is decoded here, and nothing is decided: the rows keep the connector's
 * columns, plus {@value #RECORDS_COLUMN}, the number of input records each row stands for (itself and the
 * commits it replaced), so that the decode stage counts every record read.
 */
public final class CommitCompaction {
    public static final String RECORDS_COLUMN = "rm_records";

    private CommitCompaction() {
    }

    /** The connector's rows {@code raw} with the live commits of {@code offsetsTopic} compacted per partition. */
    public static Dataset<Row> apply(Dataset<Row> raw, String offsetsTopic) {
        StructType in = raw.schema();
        StructType out = in.add(RECORDS_COLUMN, DataTypes.IntegerType, false);
        Compactor f = new Compactor(in.fieldIndex("topic"), in.fieldIndex("key"), in.fieldIndex("value"),
                in.length(), offsetsTopic);
        return raw.mapPartitions(f, Encoders.row(out));
    }

    /** An OffsetCommit record with a value: key version 0 or 1 (a big-endian int16 first), not a tombstone. */
    static boolean isLiveCommit(byte[] key, byte[] value) {
        return value != null && key != null && key.length > 2 && key[0] == 0 && (key[1] == 0 || key[1] == 1);
    }

    static final class Compactor implements MapPartitionsFunction<Row, Row> {
        private static final long serialVersionUID = 1L;
        private final int topicIdx;
        private final int keyIdx;
        private final int valueIdx;
        private final int width;
        private final String offsetsTopic;

        Compactor(int topicIdx, int keyIdx, int valueIdx, int width, String offsetsTopic) {
            this.topicIdx = topicIdx;
            this.keyIdx = keyIdx;
            this.valueIdx = valueIdx;
            this.width = width;
            this.offsetsTopic = offsetsTopic;
        }

        @Override
        public Iterator<Row> call(Iterator<Row> rows) {
            return new Compacted(rows);
        }

        private Row withCount(Row r, int records) {
            Object[] values = new Object[width + 1];
            for (int i = 0; i < width; i++) {
                values[i] = r.get(i);
            }
            values[width] = records;
            return RowFactory.create(values);
        }

        /** A held commit: its last record, and how many records of its key it stands for. */
        private static final class Held {
            Row row;
            int records;
        }

        private final class Compacted extends RowQueue {
            private final Iterator<Row> rows;
            private final LinkedHashMap<ByteBuffer, Held> held = new LinkedHashMap<>();

            Compacted(Iterator<Row> rows) {
                this.rows = rows;
            }

            private void drainHeld() {
                for (Map.Entry<ByteBuffer, Held> e : held.entrySet()) {
                    ready.add(withCount(e.getValue().row, e.getValue().records));
                }
                held.clear();
            }

            @Override
            protected void fill() {
                while (ready.isEmpty() && rows.hasNext()) {
                    Row r = rows.next();
                    if (!offsetsTopic.equals(r.getString(topicIdx))) {
                        ready.add(withCount(r, 1));
                        continue;
                    }
                    byte[] key = (byte[]) r.get(keyIdx);
                    byte[] value = (byte[]) r.get(valueIdx);
                    if (isLiveCommit(key, value)) {
                        ByteBuffer k = ByteBuffer.wrap(key);
                        Held h = held.remove(k);  // re-inserted: the order is that of the last records
                        if (h == null) {
                            h = new Held();
                        }
                        h.row = r;
                        h.records += 1;
                        held.put(k, h);
                        continue;
                    }
                    drainHeld();  // the group's membership may change here: the commits before it first
                    ready.add(withCount(r, 1));
                }
                if (ready.isEmpty() && !held.isEmpty()) {
                    drainHeld();
                }
            }
        }
    }
}
