// What a broker of the Apache Kafka release on the class path advertises in its ApiVersions answer, one line each:
//
//   release <version>                              (kafka/kafka-version.properties of kafka-clients)
//   api <key> <name> <min> <max>                   (a key a BROKER listener serves, newest stable version)
//   feature <name> <min> <max>                     (a supported feature range the broker states, server-common)
//   metadata_version <level> <name>                (the newest production metadata.version, e.g. 25 4.0-IV3)
//
// Run by scripts/api_versions_table.py with one release's kafka-clients and kafka-server-common jars:
//   java -cp 'var/api-versions/4.0.0/*' scripts/java-api-versions/ApiVersionsTable.java
// It reads the release's own enums (ApiKeys, ApiMessageType's listeners, MetadataVersion, the feature enum) and
// applies the broker's rules: a key is served on the BROKER listener when its message type lists that listener, with
// its newest stable version (a key whose only versions are unstable is not served); a feature is stated from its
// lowest to its newest production level when that level is above 0; metadata.version from the lowest KRaft level.
// The server-common classes differ between 3.9 (Features, MINIMUM_KRAFT_VERSION) and 4.x (Feature, MINIMUM_VERSION),
// so they are read by name.
import java.io.InputStream;
import java.lang.reflect.Method;
import java.util.List;
import java.util.Properties;

import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ApiKeys;

public class ApiVersionsTable {

    public static void main(String[] args) throws Exception {
        System.out.println("release " + clientsRelease());
        for (ApiKeys key : ApiKeys.values()) {
            if (!key.messageType.listeners().contains(ApiMessageType.ListenerType.BROKER)) {
                continue;
            }
            short lowest = key.oldestVersion();
            short newestStable = key.latestVersion(false);
            if (newestStable < lowest) {
                continue;  // every version of it is still unstable: a broker without unstable versions leaves it out
            }
            System.out.println("api " + key.id + " " + key.name + " " + lowest + " " + newestStable);
        }
        printFeatures();
    }

    static String clientsRelease() throws Exception {
        Properties props = new Properties();
        try (InputStream in = ApiKeys.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            props.load(in);
        }
        return props.getProperty("version");
    }

    static Class<?> firstClass(String... names) {
        for (String name : names) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException absent) {
                // the other release's name
            }
        }
        throw new IllegalStateException("none of " + String.join(", ", names) + " on the class path");
    }

    static Object staticField(Class<?> cls, String... names) throws Exception {
        for (String name : names) {
            try {
                return cls.getField(name).get(null);
            } catch (NoSuchFieldException absent) {
                // the other release's name
            }
        }
        throw new IllegalStateException(cls.getName() + " has none of " + String.join(", ", names));
    }

    static Object call(Object target, String method) throws Exception {
        Method m = target.getClass().getMethod(method);
        return m.invoke(target);
    }

    static void printFeatures() throws Exception {
        Class<?> metadata = firstClass("org.apache.kafka.server.common.MetadataVersion");
        Object newest = staticField(metadata, "LATEST_PRODUCTION");
        Object lowest = staticField(metadata, "MINIMUM_VERSION", "MINIMUM_KRAFT_VERSION");
        short newestLevel = (Short) call(newest, "featureLevel");
        System.out.println("feature metadata.version " + call(lowest, "featureLevel") + " " + newestLevel);
        System.out.println("metadata_version " + newestLevel + " " + call(newest, "version"));
        Class<?> features = firstClass("org.apache.kafka.server.common.Feature",
                                       "org.apache.kafka.server.common.Features");
        for (Object feature : (List<?>) staticField(features, "PRODUCTION_FEATURES")) {
            short max = (Short) call(feature, "latestProduction");
            if (max > 0) {
                System.out.println("feature " + call(feature, "featureName") + " "
                                   + call(feature, "minimumProduction") + " " + max);
            }
        }
    }
}
