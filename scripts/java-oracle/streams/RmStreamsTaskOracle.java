// Kafka's streams task assignor (KIP-1071, the group coordinator's StickyTaskAssignor) as the oracle of the project's
// (rebalance_monitor.core.assignors.sticky_task). RmAssignorOracle hands it the cases whose "assignor" is
// "sticky-task":
//   {"assignor": "sticky-task", "num_standby_replicas": N,
//    "subtopologies": [{"id": "0", "partitions": 4, "stateful": true}, ...],
//    "members": [{"member_id": "m1", "process_id": "p1", "active": [["0", 1], ...], "standby": [...],
//                 "warmup": [...], "task_offsets": [["0", 1, 1234], ...], "client_tags": {"az": "a"},
//                 "rack": null, "instance_id": null}, ...]}
// and it answers {"result": {member: {"active": [[subtopology, partition], ...], "standby": [...], "warmup": []}}}
// (sorted). The assignor gets what the coordinator's streams TargetAssignmentBuilder gives it: the members in a
// HashMap filled in the case's order, the subtopologies in their sorted order, num.standby.replicas as the group's
// assignment configuration. Compiled only against releases whose group coordinator has this API (4.4.0 and later).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.*;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentConfigsImpl;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberMetadataAndStateImpl;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;

public class RmStreamsTaskOracle {
    // fills reply with {"result": ...}; returns the nanoseconds spent in the assignor (its exceptions propagate)
    public static long answer(JsonNode c, ObjectNode reply) {
        SortedMap<String, int[]> subtopologies = new TreeMap<>();  // id -> {partitions, stateful}
        for (JsonNode s : c.path("subtopologies")) {
            subtopologies.put(s.get("id").asText(),
                new int[] {s.get("partitions").asInt(), s.path("stateful").asBoolean(false) ? 1 : 0});
        }
        TopologyDescriber topology = new TopologyDescriber() {
            public List<String> subtopologies() { return List.copyOf(subtopologies.keySet()); }
            public int maxNumInputPartitions(String id) { return get(id)[0]; }
            public boolean isStateful(String id) { return get(id)[1] == 1; }
            int[] get(String id) {
                int[] s = subtopologies.get(id);
                if (s == null) throw new NoSuchElementException("Topology does not contain subtopology " + id);
                return s;
            }
        };
        Map<String, MemberMetadataAndStateImpl> members = new HashMap<>();
        List<String> order = new ArrayList<>();
        for (JsonNode m : c.path("members")) {
            Map<String, String> tags = new HashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = m.path("client_tags").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                tags.put(e.getKey(), e.getValue().asText());
            }
            Map<String, Map<Integer, Long>> offsets = new HashMap<>();
            for (JsonNode t : m.path("task_offsets")) {
                offsets.computeIfAbsent(t.get(0).asText(), k -> new HashMap<>()).put(t.get(1).asInt(), t.get(2).asLong());
            }
            String id = m.get("member_id").asText();
            order.add(id);
            members.put(id, new MemberMetadataAndStateImpl(
                optional(m, "instance_id"), optional(m, "rack"), m.get("process_id").asText(), tags,
                tasks(m.path("active")), tasks(m.path("standby")), tasks(m.path("warmup")), offsets, Map.of()));
        }
        AssignmentConfigsImpl configs = new AssignmentConfigsImpl(c.path("num_standby_replicas").asInt(0), List.of());
        long t0 = System.nanoTime();
        GroupAssignment ga = new StickyTaskAssignor().assign(new GroupSpecImpl(members, configs), topology);
        long nanos = System.nanoTime() - t0;
        ObjectNode result = reply.putObject("result");
        for (String id : new TreeSet<>(order)) {
            MemberAssignment a = ga.members().get(id);
            ObjectNode r = result.putObject(id);
            put(r.putArray("active"), a == null ? Map.of() : a.activeTasks());
            put(r.putArray("standby"), a == null ? Map.of() : a.standbyTasks());
            r.putArray("warmup");
        }
        return nanos;
    }

    static Optional<String> optional(JsonNode m, String field) {
        return m.hasNonNull(field) ? Optional.of(m.get(field).asText()) : Optional.empty();
    }

    static Map<String, Set<Integer>> tasks(JsonNode list) {
        Map<String, Set<Integer>> out = new HashMap<>();
        for (JsonNode t : list) out.computeIfAbsent(t.get(0).asText(), k -> new HashSet<>()).add(t.get(1).asInt());
        return out;
    }

    static void put(ArrayNode out, Map<String, Set<Integer>> tasks) {
        for (Map.Entry<String, Set<Integer>> e : new TreeMap<>(tasks).entrySet()) {
            for (int p : new TreeSet<>(e.getValue())) out.addArray().add(e.getKey()).add(p);
        }
    }
}
