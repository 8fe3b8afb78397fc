// Kafka's own assignors as the oracle of the project's: reads `rebalance-monitor assign` cases as JSON lines on
// stdin and prints, per line, {"result": {member: [[topic, partition], ...]}} (sorted) or {"error": "..."}, computed
// by the classes of the pinned Kafka release:
//   range, roundrobin, sticky, cooperative-sticky: kafka-clients' ConsumerPartitionAssignor implementations, called
//     the way the group leader calls them (assign(Cluster, GroupSubscription)), partition replicas on nodes with
//     the case's racks; sticky's previous assignment and generation travel in its user data, as on the wire;
//   uniform, server-range: the group coordinator's UniformAssignor and RangeAssignor with a GroupSpec built like the
//     coordinator's (subscription type, each member's current target assignment, the inverted target).
//   simple: the group coordinator's SimpleAssignor (share groups), its GroupSpec built the same way, with the case's
//     "assignable_partitions" ({topic: [partition, ...]}: the partitions whose share-group state is initialised) as
//     the coordinator's map of assignable partitions (none given: every partition is assignable).
//   A server case's "coordinator_members" (["+member id", "-member id", ...]: the members the coordinator added to
//     and removed from the group, in order) fills the assignor's member map as the target assignment builder does:
//     first the members a TimelineHashMap so filled holds, as it iterates them, then the case's other members.
// A case whose "assignor" is "sticky-task" is a streams group's (KIP-1071): streams/RmStreamsTaskOracle.java.
// A line {"timeline": ["+key", "-key", ...]} answers {"order": [key, ...]}: how a TimelineHashMap iterates its keys
// after those puts and removes.
// A line {"warmup": N} runs the next case N times first (for timing); {"time": true} in a case adds "nanos".
// A line {"batch": [case, ...]} answers many cases in one reply, {"results": [reply, ...], "nanos": N, "busy_nanos": B}
// (N: the time inside the assignors, B: the whole batch with the request parsed), so a soak pays one round trip per
// batch.
// Compiled by rebalance_monitor.testing.assignor_oracle against each release named in kafka-version (the releases
// whose API it is written for), one JVM and one class path per release: var/kafka/<version>/libs. A case's
// "release" field is for the project's side; the JVM answers with the classes it runs.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.types.ArrayOf;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.Struct;
import org.apache.kafka.common.protocol.types.Type;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;

public class RmAssignorOracle {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        // replies only on stdout: whatever Kafka's classes log goes to stderr
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false,
                                          StandardCharsets.UTF_8);
        System.setOut(System.err);
        String line;
        int warmup = 0;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) continue;
            ObjectNode reply = JSON.createObjectNode();
            long start = System.nanoTime();
            try {
                JsonNode c = JSON.readTree(line);
                if (c.has("warmup")) {
                    warmup = c.get("warmup").asInt();
                    continue;
                }
                if (c.has("timeline")) {
                    ArrayNode order = reply.putArray("order");
                    for (String key : timeline(c.get("timeline")).keySet()) order.add(key);
                } else if (c.has("batch")) {
                    ArrayNode results = reply.putArray("results");
                    long nanos = 0;
                    for (JsonNode one : c.get("batch")) {
                        nanos += answer(one, results.addObject());
                    }
                    reply.put("nanos", nanos);
                } else {
                    for (int i = 0; i < warmup; i++) answer(c, JSON.createObjectNode());
                    warmup = 0;
                    long nanos = answer(c, reply);
                    if (c.path("time").asBoolean(false)) reply.put("nanos", nanos);
                }
            } catch (Exception e) {
                reply.removeAll();
                error(reply, e);
            }
            if (reply.has("results")) reply.put("busy_nanos", System.nanoTime() - start);
            out.println(JSON.writeValueAsString(reply));
            out.flush();
        }
    }

    // {"result": {member: [[topic, partition], ...]}} (members and partitions sorted) or {"error": "..."}; returns
    // the nanoseconds spent in the assignor
    static long answer(JsonNode c, ObjectNode reply) {
        if ("sticky-task".equals(c.path("assignor").asText())) return streamsTasks(c, reply);
        Map<String, List<TopicPartition>> result;
        long t0 = System.nanoTime();
        try {
            result = assign(c);
        } catch (Exception | StackOverflowError e) {
            error(reply, e);
            return System.nanoTime() - t0;
        }
        long nanos = System.nanoTime() - t0;
        ObjectNode r = reply.putObject("result");
        for (Map.Entry<String, List<TopicPartition>> e : new TreeMap<>(result).entrySet()) {
            ArrayNode tps = r.putArray(e.getKey());
            List<TopicPartition> sorted = new ArrayList<>(e.getValue());
            sorted.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
            for (TopicPartition tp : sorted) tps.addArray().add(tp.topic()).add(tp.partition());
        }
        return nanos;
    }

    // a streams group's task assignment (streams/RmStreamsTaskOracle.java, compiled only against the releases that
    // have the streams task assignor API: reached by reflection so this file compiles against every release)
    static Method streamsOracle;

    static long streamsTasks(JsonNode c, ObjectNode reply) {
        long t0 = System.nanoTime();
        try {
            if (streamsOracle == null) {
                streamsOracle = Class.forName("RmStreamsTaskOracle").getMethod("answer", JsonNode.class, ObjectNode.class);
            }
            return (Long) streamsOracle.invoke(null, c, reply);
        } catch (ClassNotFoundException e) {
            reply.removeAll();
            reply.put("error", "this release has no streams task assignor");
        } catch (Exception | StackOverflowError e) {
            reply.removeAll();
            error(reply, e);
        }
        return System.nanoTime() - t0;
    }

    static void error(ObjectNode reply, Throwable e) {
        Throwable t = e instanceof java.lang.reflect.InvocationTargetException && e.getCause() != null
            ? e.getCause() : e;
        StackTraceElement[] st = t.getStackTrace();
        reply.put("error", t.getClass().getSimpleName() + ": " + t.getMessage()
            + (st.length > 0 ? " at " + st[0] : ""));
    }

    static Map<String, List<TopicPartition>> assign(JsonNode c) throws Exception {
        String name = c.get("assignor").asText();
        switch (name) {
            case "range": return client(new RangeAssignor(), c, false);
            case "roundrobin": return client(new RoundRobinAssignor(), c, false);
            case "sticky": return client(new StickyAssignor(), c, true);
            case "cooperative-sticky": return client(new CooperativeStickyAssignor(), c, false);
            case "uniform": return server(new org.apache.kafka.coordinator.group.assignor.UniformAssignor(), c, false);
            case "server-range": return server(new org.apache.kafka.coordinator.group.assignor.RangeAssignor(), c, false);
            case "simple": return server(new org.apache.kafka.coordinator.group.assignor.SimpleAssignor(), c, true);
            default: throw new IllegalArgumentException("unknown assignor " + name);
        }
    }

    static List<String> strings(JsonNode arr) {
        List<String> out = new ArrayList<>();
        if (arr != null) for (JsonNode n : arr) out.add(n.asText());
        return out;
    }

    static List<TopicPartition> owned(JsonNode m) {
        List<TopicPartition> out = new ArrayList<>();
        for (JsonNode tp : m.path("owned_partitions")) out.add(new TopicPartition(tp.get(0).asText(), tp.get(1).asInt()));
        return out;
    }

    // --- the client assignors -----------------------------------------------------------------
    static Map<String, List<TopicPartition>> client(ConsumerPartitionAssignor assignor, JsonNode c, boolean stickyUserData)
            throws Exception {
        Map<String, Node> rackNodes = new HashMap<>();
        List<PartitionInfo> parts = new ArrayList<>();
        Node plain = new Node(0, "broker-0", 9092);
        List<Node> nodes = new ArrayList<>(List.of(plain));
        JsonNode racks = c.path("partition_racks");
        for (Iterator<Map.Entry<String, JsonNode>> it = c.get("partitions_per_topic").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String topic = e.getKey();
            for (int p = 0; p < e.getValue().asInt(); p++) {
                List<Node> replicas = new ArrayList<>();
                JsonNode rs = racks.path(topic).path(p);
                if (rs.isArray() && rs.size() > 0) {
                    for (JsonNode rack : rs) {
                        // one broker per (rack, position) so a partition may have two replicas in one rack
                        String key = rack.asText() + "#" + replicas.size();
                        Node n = rackNodes.get(key);
                        if (n == null) {
                            n = new Node(nodes.size(), "broker-" + nodes.size(), 9092, rack.asText());
                            rackNodes.put(key, n);
                            nodes.add(n);
                        }
                        replicas.add(n);
                    }
                } else {
                    replicas.add(plain);
                }
                Node[] arr = replicas.toArray(new Node[0]);
                parts.add(new PartitionInfo(topic, p, arr[0], arr, arr));
            }
        }
        Cluster cluster = new Cluster("oracle", nodes, parts, Set.of(), Set.of());
        // a HashMap filled in the order the leader got the members, as the consumer's coordinator builds it
        Map<String, Subscription> subs = new HashMap<>();
        List<String> order = new ArrayList<>();
        for (JsonNode m : c.get("members")) {
            List<String> topics = strings(m.get("topics"));
            Optional<String> rack = m.hasNonNull("rack") ? Optional.of(m.get("rack").asText()) : Optional.empty();
            Integer gen = m.hasNonNull("generation") ? m.get("generation").asInt() : null;
            List<TopicPartition> owned = owned(m);
            Subscription s;
            if (stickyUserData) {
                ByteBuffer userData = (owned.isEmpty() && gen == null) ? null : stickyUserData(owned, gen, rack);
                // an eager member revoked everything before joining (no owned partitions in the protocol) but, like
                // every Java consumer since 2.4, still sends its generation in the subscription
                s = new Subscription(topics, userData, List.of(), gen == null ? -1 : gen, rack);
            } else {
                s = new Subscription(topics, null, owned, gen == null ? -1 : gen, rack);
            }
            if (m.hasNonNull("group_instance_id")) s.setGroupInstanceId(Optional.of(m.get("group_instance_id").asText()));
            subs.put(m.get("member_id").asText(), s);
            order.add(m.get("member_id").asText());
        }
        ConsumerPartitionAssignor.GroupAssignment ga = assignor.assign(cluster, new GroupSubscription(subs));
        Map<String, List<TopicPartition>> out = new HashMap<>();
        for (String id : order) {
            ConsumerPartitionAssignor.Assignment a = ga.groupAssignment().get(id);
            out.put(id, a == null ? List.of() : a.partitions());
        }
        return out;
    }

    // StickyAssignor's user data (its previous assignment and generation), written by its own serializer.
    static ByteBuffer stickyUserData(List<TopicPartition> owned, Integer gen, Optional<String> rack) throws Exception {
        if (gen == null) return stickyUserDataV0(owned);
        Class<?> memberData = Class.forName("org.apache.kafka.clients.consumer.internals.AbstractStickyAssignor$MemberData");
        Constructor<?> ctor = memberData.getDeclaredConstructor(List.class, Optional.class, Optional.class);
        ctor.setAccessible(true);
        Object md = ctor.newInstance(owned, Optional.ofNullable(gen), rack);
        Method ser = StickyAssignor.class.getDeclaredMethod("serializeTopicPartitionAssignment", memberData);
        ser.setAccessible(true);
        return (ByteBuffer) ser.invoke(null, md);
    }

    // The user data of StickyAssignors before Kafka 2.3 (no generation): version 0 of its layout, an array of
    // (topic, [partition]), which StickyAssignor still reads.
    static ByteBuffer stickyUserDataV0(List<TopicPartition> owned) {
        Schema topic = new Schema(new Field("topic", Type.STRING), new Field("partitions", new ArrayOf(Type.INT32)));
        Schema v0 = new Schema(new Field("previous_assignment", new ArrayOf(topic)));
        Map<String, List<Integer>> byTopic = new LinkedHashMap<>();
        for (TopicPartition tp : owned) byTopic.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
        List<Struct> topics = new ArrayList<>();
        for (Map.Entry<String, List<Integer>> e : byTopic.entrySet()) {
            Struct t = new Struct(topic);
            t.set("topic", e.getKey());
            t.set("partitions", e.getValue().toArray());
            topics.add(t);
        }
        Struct struct = new Struct(v0);
        struct.set("previous_assignment", topics.toArray());
        ByteBuffer buffer = ByteBuffer.allocate(v0.sizeOf(struct));
        v0.write(buffer, struct);
        buffer.flip();
        return buffer;
    }

    // --- the group coordinator's assignors -------------------------------------------------------
    // byName: the subscription type from the topic names the members subscribe to, topics the cluster lacks included
    // (as the coordinator decides it: ModernGroup.subscriptionType), not from the topic ids they resolve to
    static Map<String, List<TopicPartition>> server(PartitionAssignor assignor, JsonNode c, boolean byName)
            throws Exception {
        Map<String, Uuid> ids = new HashMap<>();
        Map<Uuid, String> names = new HashMap<>();
        Map<Uuid, Integer> counts = new HashMap<>();
        JsonNode given = c.path("topic_ids");
        for (Iterator<Map.Entry<String, JsonNode>> it = c.get("partitions_per_topic").fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            Uuid id = given.hasNonNull(e.getKey()) ? Uuid.fromString(given.get(e.getKey()).asText()) : Uuid.randomUuid();
            ids.put(e.getKey(), id);
            names.put(id, e.getKey());
            counts.put(id, e.getValue().asInt());
        }
        JsonNode racks = c.path("partition_racks");
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            public int numPartitions(Uuid topicId) { return counts.getOrDefault(topicId, -1); }
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                JsonNode rs = racks.path(names.get(topicId)).path(partition);
                return rs.isArray() ? new HashSet<>(strings(rs)) : Set.of();
            }
        };
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = new LinkedHashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        Set<Set<Uuid>> distinct = new HashSet<>();
        Set<Set<String>> distinctNames = new HashSet<>();
        Map<String, Uuid> deleted = new HashMap<>();
        for (JsonNode m : c.get("members")) {
            String id = m.get("member_id").asText();
            Set<Uuid> subscribed = new HashSet<>();
            for (String t : strings(m.get("topics"))) if (ids.containsKey(t)) subscribed.add(ids.get(t));
            distinct.add(subscribed);
            distinctNames.add(new HashSet<>(strings(m.get("topics"))));
            // the member's current target as the coordinator loads it from its record: a HashMap of topics, each a
            // HashSet copied from the record's partition list
            Map<Uuid, List<Integer>> lists = new LinkedHashMap<>();
            for (TopicPartition tp : owned(m)) {
                // a deleted topic keeps its id in the targets; the describer knows nothing of it
                Uuid t = ids.containsKey(tp.topic()) ? ids.get(tp.topic()) : deleted.computeIfAbsent(tp.topic(),
                    k -> given.hasNonNull(k) ? Uuid.fromString(given.get(k).asText()) : Uuid.randomUuid());
                names.putIfAbsent(t, tp.topic());  // a share assignor may leave a deleted topic in a target
                lists.computeIfAbsent(t, k -> new ArrayList<>()).add(tp.partition());
                inverted.computeIfAbsent(t, k -> new HashMap<>()).put(tp.partition(), id);
            }
            Map<Uuid, Set<Integer>> current = new HashMap<>();
            for (Map.Entry<Uuid, List<Integer>> e : lists.entrySet()) current.put(e.getKey(), new HashSet<>(e.getValue()));
            Optional<String> rack = m.hasNonNull("rack") ? Optional.of(m.get("rack").asText()) : Optional.empty();
            Optional<String> instance = m.hasNonNull("group_instance_id")
                ? Optional.of(m.get("group_instance_id").asText()) : Optional.empty();
            specs.put(id, new MemberSubscriptionAndAssignmentImpl(rack, instance, subscribed, new Assignment(current)));
        }
        // a HashMap, as the coordinator's target assignment builder fills it: the group's members as its
        // TimelineHashMap iterates them, then the member whose heartbeat computes the assignment (a joining one)
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        if (c.has("coordinator_members")) {
            for (String id : timeline(c.get("coordinator_members")).keySet()) {
                if (specs.containsKey(id)) members.put(id, specs.get(id));
            }
        }
        specs.forEach(members::putIfAbsent);
        SubscriptionType type = (byName ? distinctNames.size() : distinct.size()) <= 1
            ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
        GroupSpecImpl spec;
        if (c.hasNonNull("assignable_partitions")) {
            Map<Uuid, Set<Integer>> assignable = new HashMap<>();
            for (Iterator<Map.Entry<String, JsonNode>> it = c.get("assignable_partitions").fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> e = it.next();
                Set<Integer> parts = new HashSet<>();
                for (JsonNode p : e.getValue()) parts.add(p.asInt());
                if (ids.containsKey(e.getKey())) assignable.put(ids.get(e.getKey()), parts);
            }
            // (by reflection: Kafka 4.0.0's GroupSpecImpl has no map of assignable partitions)
            spec = GroupSpecImpl.class.getConstructor(Map.class, SubscriptionType.class, Map.class, Optional.class)
                .newInstance(members, type, inverted, Optional.of(assignable));
        } else {
            spec = new GroupSpecImpl(members, type, inverted);
        }
        GroupAssignment ga = assignor.assign(spec, describer);
        Map<String, List<TopicPartition>> out = new HashMap<>();
        for (String id : members.keySet()) {
            List<TopicPartition> tps = new ArrayList<>();
            MemberAssignment a = ga.members().get(id);
            if (a != null) {
                for (Map.Entry<Uuid, Set<Integer>> e : a.partitions().entrySet())
                    for (int p : e.getValue()) tps.add(new TopicPartition(names.get(e.getKey()), p));
            }
            out.put(id, tps);
        }
        return out;
    }

    // a TimelineHashMap (made empty, as a group's member map is) after the puts ("+key") and removes ("-key") of ops
    static Map<String, Boolean> timeline(JsonNode ops) throws Exception {
        // SnapshotRegistry takes a LogContext, whose package differs between releases
        Constructor<?> make = null;
        for (Constructor<?> k : SnapshotRegistry.class.getConstructors()) {
            if (k.getParameterCount() == 1) make = k;
        }
        Object logContext = make.getParameterTypes()[0].getConstructor().newInstance();
        SnapshotRegistry registry = (SnapshotRegistry) make.newInstance(logContext);
        TimelineHashMap<String, Boolean> map = new TimelineHashMap<>(registry, 0);
        for (String op : strings(ops)) {
            if (op.startsWith("+")) map.put(op.substring(1), Boolean.TRUE);
            else if (op.startsWith("-")) map.remove(op.substring(1));
            else throw new IllegalArgumentException("a timeline op is +key or -key, not " + op);
        }
        return map;
    }
}
