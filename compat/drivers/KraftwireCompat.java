// The Java kafka-clients driver of the kraftwire compatibility matrix.
// Usage: java KraftwireCompat MODE BOOTSTRAP GROUP COUNT TIMEOUT_MS
//   assign   - KafkaConsumer.assign + seekToBeginning, print COUNT records
//   group    - KafkaConsumer.subscribe under GROUP, print COUNT records, commitSync(last + 1), close
//   describe - Admin via bootstrap.controllers: describeMetadataQuorum + describeCluster (controllers);
//              Admin via bootstrap.servers: describeMetadataQuorum + describeCluster
//   describe-servers - only the bootstrap.servers part, with the quorum in full (e.g. through a broker)
//   version  - the kafka-clients version
// Records print as {"offset": n, "value": "<hex>"}; describe prints {"describe": {...}}.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.AppInfoParser;

public final class KraftwireCompat {
    private static final String TOPIC = "__cluster_metadata";
    private static final TopicPartition TP = new TopicPartition(TOPIC, 0);

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        switch (mode) {
            case "version":
                System.out.println("{\"version\": \"" + AppInfoParser.getVersion() + "\"}");
                break;
            case "assign":
            case "group":
                consume(args[1], mode.equals("group") ? args[2] : null, Integer.parseInt(args[3]),
                        Long.parseLong(args[4]));
                break;
            case "describe":
                describe(args[1], Long.parseLong(args[4]));
                break;
            case "describe-servers":
                describeServers(args[1], Long.parseLong(args[4]));
                break;
            default:
                throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    private static void consume(String bootstrap, String group, int count, long timeoutMs) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        int got = 0;
        long last = -1;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            if (group == null) {
                consumer.assign(Collections.singletonList(TP));
                consumer.seekToBeginning(Collections.singletonList(TP));
            } else {
                consumer.subscribe(Collections.singletonList(TOPIC));
            }
            long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            while (got < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    if (got < count) {
                        System.out.println("{\"offset\": " + r.offset() + ", \"value\": " + hex(r.value()) + "}");
                        last = r.offset();
                        got++;
                    }
                }
            }
            if (got < count) {
                System.err.println("read " + got + " of " + count + " records in " + timeoutMs + " ms");
                System.exit(2);
            }
            if (group != null) {
                consumer.commitSync(Collections.singletonMap(TP, new OffsetAndMetadata(last + 1)));
            }
        }
        System.out.flush();
    }

    private static void describe(String bootstrap, long timeoutMs) throws Exception {
        StringBuilder out = new StringBuilder("{\"describe\": {");
        Properties pc = new Properties();
        pc.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(pc)) {
            QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(timeoutMs, TimeUnit.MILLISECONDS);
            List<Integer> voters = new ArrayList<>();
            for (QuorumInfo.ReplicaState r : q.voters()) {
                voters.add(r.replicaId());
            }
            Collections.sort(voters);
            out.append("\"leader_id\": ").append(q.leaderId())
               .append(", \"leader_epoch\": ").append(q.leaderEpoch())
               .append(", \"high_watermark\": ").append(q.highWatermark())
               .append(", \"voters\": ").append(voters);
            DescribeClusterResult c = admin.describeCluster();
            out.append(", \"controllers_cluster_id\": \"").append(c.clusterId().get(timeoutMs, TimeUnit.MILLISECONDS))
               .append("\", \"controllers_controller_id\": ").append(c.controller().get(timeoutMs, TimeUnit.MILLISECONDS).id())
               .append(", \"controllers_nodes\": ").append(ids(c.nodes().get(timeoutMs, TimeUnit.MILLISECONDS)));
        }
        Properties pb = new Properties();
        pb.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(pb)) {
            QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(timeoutMs, TimeUnit.MILLISECONDS);
            out.append(", \"servers_leader_id\": ").append(q.leaderId());
            DescribeClusterResult c = admin.describeCluster();
            out.append(", \"cluster_id\": \"").append(c.clusterId().get(timeoutMs, TimeUnit.MILLISECONDS))
               .append("\", \"controller_id\": ").append(c.controller().get(timeoutMs, TimeUnit.MILLISECONDS).id())
               .append(", \"nodes\": ").append(ids(c.nodes().get(timeoutMs, TimeUnit.MILLISECONDS)));
        }
        System.out.println(out.append("}}"));
        System.out.flush();
    }

    private static void describeServers(String bootstrap, long timeoutMs) throws Exception {
        StringBuilder out = new StringBuilder("{\"describe\": {");
        Properties pb = new Properties();
        pb.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(pb)) {
            QuorumInfo q = admin.describeMetadataQuorum().quorumInfo().get(timeoutMs, TimeUnit.MILLISECONDS);
            List<Integer> voters = new ArrayList<>();
            for (QuorumInfo.ReplicaState r : q.voters()) {
                voters.add(r.replicaId());
            }
            Collections.sort(voters);
            List<Integer> observers = new ArrayList<>();
            for (QuorumInfo.ReplicaState r : q.observers()) {
                observers.add(r.replicaId());
            }
            Collections.sort(observers);
            out.append("\"leader_id\": ").append(q.leaderId())
               .append(", \"leader_epoch\": ").append(q.leaderEpoch())
               .append(", \"high_watermark\": ").append(q.highWatermark())
               .append(", \"voters\": ").append(voters)
               .append(", \"observers\": ").append(observers);
            DescribeClusterResult c = admin.describeCluster();
            out.append(", \"cluster_id\": \"").append(c.clusterId().get(timeoutMs, TimeUnit.MILLISECONDS))
               .append("\", \"controller_id\": ").append(c.controller().get(timeoutMs, TimeUnit.MILLISECONDS).id())
               .append(", \"nodes\": ").append(ids(c.nodes().get(timeoutMs, TimeUnit.MILLISECONDS)));
        }
        System.out.println(out.append("}}"));
        System.out.flush();
    }

    private static List<Integer> ids(java.util.Collection<Node> nodes) {
        return nodes.stream().map(Node::id).sorted().collect(Collectors.toList());
    }

    private static String hex(byte[] value) {
        if (value == null) {
            return "null";
        }
        StringBuilder sb = new StringBuilder("\"");
        for (byte b : value) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.append('"').toString();
    }
}
