package rebalancemonitor.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.junit.jupiter.api.Test;

class EventPackingTest {
    private static final long NOW = 1_700_000_000_000L;

    private static HotEvent hot(String json) {
        return HotEvent.parse(json.getBytes(StandardCharsets.UTF_8), 1 << 20, NOW, 3_600_000L);
    }

    @Test
    void theFastPathsEventsAreRead() {
        HotEvent h = hot("{\"v\":1,\"type\":\"heartbeat\",\"ts\":5,\"group\":\"g\",\"member_id\":\"m\","
                + "\"generation\":3,\"error\":null,\"client_id\":\"c\"}");
        assertNotNull(h);
        assertEquals(List.of("heartbeat", 5L, "g", "m", 3L, "c"), List.of(h.etype, h.ts, h.group, h.member, h.num, h.client));
        assertNull(h.err);
        HotEvent p = hot("{\"type\":\"poll\",\"v\":1,\"ts\":6,\"group\":\"g\",\"member_id\":\"m\"}");
        assertNotNull(p);
        assertNull(p.num);
        HotEvent c = hot("{\"v\":1,\"type\":\"commit\",\"ts\":7,\"group\":\"g\",\"member_id\":\"m\","
                + "\"offsets\":[[\"t\",0,12],[\"t\",1,-1]],\"generation\":null}");
        assertNotNull(c);
        assertEquals(2, c.offsets.size());
        assertEquals(12L, c.offsets.get(0)[2]);
        assertNotNull(hot("{\"v\":1,\"type\":\"commit\",\"ts\":7,\"group\":\"g\",\"member_id\":\"\",\"offsets\":[]}"));
    }

    @Test
    void whatThePythonFastPathWouldNotTakeGoesToPythonAsItCame() {
        String hb = "{\"v\":1,\"type\":\"heartbeat\",\"ts\":5,\"group\":\"g\",\"member_id\":\"m\",\"generation\":3,"
                + "\"error\":null";
        for (String bad : List.of(
                hb + ",\"records\":1}",                      // a key its type does not have
                hb + ",\"extra\":1}",                        // a key the fast path does not know
                hb + ",\"host\":5}",                         // an identity that is no string
                hb + ",\"group\":\"h\"}",                    // a key given twice
                hb + "} {}",                                 // trailing content
                hb.replace("\"ts\":5", "\"ts\":5.0") + "}",  // a float where an integer goes
                hb.replace("\"ts\":5", "\"ts\":-1") + "}",
                hb.replace("\"ts\":5", "\"ts\":9007199254740992") + "}",
                hb.replace("\"ts\":5", "\"ts\":" + (NOW + 3_600_001L)) + "}",  // too far ahead: Python rejects it
                hb + ",\"received_ms\":5}",  // a key of other types (the broker plugin's arrival time)
                // the broker plugin's events, their arrival time beside: Python decides which is their time
                "{\"v\":1,\"type\":\"client_metrics\",\"ts\":" + (NOW + 3_600_001L) + ",\"group\":\"g\","
                        + "\"member_id\":\"m\",\"source\":\"kip714\",\"received_ms\":" + NOW + "}",
                "{\"v\":1,\"type\":\"leave\",\"ts\":5,\"group\":\"g\",\"member_id\":\"m\",\"reason\":null,"
                        + "\"received_ms\":5}",
                hb.replace("\"generation\":3", "\"generation\":true") + "}",
                hb.replace("\"generation\":3", "\"generation\":99999999999999999999") + "}",
                hb.replace("\"v\":1", "\"v\":2") + "}",
                hb.replace("\"group\":\"g\"", "\"group\":\"\"") + "}",
                hb.replace("\"member_id\":\"m\"", "\"member_id\":\"\\ud800\"") + "}",  // a lone surrogate
                hb.replace(",\"error\":null", "") + "}",  // a required key missing
                "{\"v\":1,\"type\":\"join\",\"ts\":5,\"group\":\"g\",\"member_id\":\"m\"}",
                "{\"v\":1,\"type\":\"commit\",\"ts\":7,\"group\":\"g\",\"member_id\":\"m\",\"offsets\":[[\"t\",-1,1]]}",
                "{\"v\":1,\"type\":\"commit\",\"ts\":7,\"group\":\"g\",\"member_id\":\"m\",\"offsets\":[[\"t\",0]]}",
                "{\"v\":1,\"type\":\"poll\",\"ts\":7,\"group\":\"g\",\"member_id\":\"m\",\"records\":\"5\"}",
                "[1]", "not json", "\uFEFF{}")) {
            assertNull(hot(bad), bad);
        }
        assertNull(HotEvent.parse(null, 10, NOW, -1));
        assertNull(HotEvent.parse((hb + "}").getBytes(StandardCharsets.UTF_8), 20, NOW, -1));  // over max bytes
    }

    private static Row rec(String topic, long offset, String value) {
        return RowFactory.create(topic, 2, offset, new Timestamp(NOW + offset), null,
                value.getBytes(StandardCharsets.UTF_8));
    }

    private static String beat(String group, String member, long ts) {
        return "{\"v\":1,\"type\":\"heartbeat\",\"ts\":" + ts + ",\"group\":\"" + group + "\",\"member_id\":\""
                + member + "\",\"generation\":1,\"error\":null}";
    }

    @Test
    void packsPerGroupEveryChunkOtherRowsAsTheyCame() {
        EventPacking.Packer packer = new EventPacking.Packer(6, -1, new int[] {0, 1, 2, 3, 4, 5}, Set.of("ev"),
                1 << 20, -1, 3);
        List<Row> in = List.of(rec("ev", 0, beat("a", "m1", 10)), rec("ev", 1, beat("b", "m2", 12)),
                rec("ev", 2, "{\"v\":1,\"type\":\"join\"}"), rec("other", 3, beat("a", "m1", 11)),
                rec("ev", 4, beat("a", "m3", 10)), rec("ev", 5, beat("a", "m1", 14)));
        List<String> out = new ArrayList<>();
        packer.call(in.iterator()).forEachRemaining(r -> out.add(r.get(6) + "|" + r.get(7) + "|"
                + (r.get(8) == null ? "-" : new String((byte[]) r.get(8), StandardCharsets.UTF_8)) + "|" + r.get(9)
                + "|" + r.getLong(2)));
        assertEquals(List.of(
                "1|null|-|null|2", "1|null|-|null|3",  // passed as they came
                // the third packed record fills the chunk: a's two events (the newest time first seen: offset 0)
                "2|a|[[10,10],[2199023255552,2199023255556],[\"heartbeat\",\"heartbeat\"],[\"m1\",\"m3\"],[1,1],"
                        + "[null,null],[null,null],[null,null],[null,null],[null,null]]|10|0",
                "1|b|[[12],[2199023255553],[\"heartbeat\"],[\"m2\"],[1],[null],[null],[null],[null],[null]]|12|1",
                "1|a|[[14],[2199023255557],[\"heartbeat\"],[\"m1\"],[1],[null],[null],[null],[null],[null]]|14|5"),
                out);
    }
}
