package rebalancemonitor.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;

class CommitCompactionTest {
    private static final String T = "__consumer_offsets";

    private static byte[] key(int version, String tail) {
        byte[] t = tail.getBytes();
        byte[] k = new byte[2 + t.length];
        k[1] = (byte) version;
        System.arraycopy(t, 0, k, 2, t.length);
        return k;
    }

    private static Row row(String topic, byte[] key, String value, long offset) {
        return RowFactory.create(key, value == null ? null : value.getBytes(), topic, 0, offset);
    }

    private static List<String> run(List<Row> in) {
        CommitCompaction.Compactor c = new CommitCompaction.Compactor(2, 0, 1, 5, T);
        List<String> out = new ArrayList<>();
        c.call(in.iterator()).forEachRemaining(r -> out.add(r.getLong(4) + "x" + r.getInt(5)));
        return out;
    }

    @Test
    void theLastCommitPerKeyPassesWhenANonCommitRecordComesOrThePartitionEnds() {
        byte[] a = key(1, "g/t/0");
        byte[] b = key(0, "g/t/1");
        List<Row> in = List.of(row(T, a, "c", 0), row(T, b, "c", 1), row(T, a, "c", 2), row(T, a, "c", 3),
                row(T, key(2, "g"), "meta", 4), row(T, b, "c", 5), row(T, b, "c", 6));
        // a's three commits stand as its last; b's first stays before a's (the order of last records)
        assertEquals(List.of("1x1", "3x3", "4x1", "6x2"), run(in));
    }

    @Test
    void aTombstoneOfACommitIsABarrierAndPassesItself() {
        byte[] a = key(1, "g/t/0");
        List<Row> in = List.of(row(T, a, "c", 0), row(T, a, "c", 1), row(T, a, null, 2), row(T, a, "c", 3));
        assertEquals(List.of("1x2", "2x1", "3x1"), run(in));
    }

    @Test
    void otherTopicsPassAsTheyCome() {
        byte[] a = key(1, "g/t/0");
        List<Row> in = List.of(row(T, a, "c", 0), row("events", a, "c", 1), row(T, a, "c", 2));
        assertEquals(List.of("1x1", "2x2"), run(in));
    }
}
