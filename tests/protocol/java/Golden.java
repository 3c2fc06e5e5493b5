// Golden bytes from Apache Kafka's own serializers (kafka-clients), for tests/protocol/test_golden_java.py.
//
// Builds representative org.apache.kafka.common.message.*Data objects, writes each one with
// ObjectSerializationCache + ByteBufferAccessor in the listed versions, and prints one line per case:
//     <case id> <hex bytes>
// Record batches (plain, compressed, control) are printed the same way under "records:" ids.
// The Python test builds the same values with kraftwire's generated classes and compares.

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.record.RecordBatch;
import org.apache.kafka.common.record.SimpleRecord;
import org.apache.kafka.common.record.TimestampType;

public final class Golden {
    static final Uuid U1 = new Uuid(0x0101010101010101L, 0x1111111111111111L);
    static final Uuid U2 = new Uuid(0x0202020202020202L, 0x2222222222222222L);
    static final Uuid U3 = new Uuid(0x0303030303030303L, 0x3333333333333333L);
    static final Uuid TOPIC = new Uuid(0x7a7a7a7a00000001L, 0x8000000000000042L);
    static final String META = "__cluster_metadata";
    static final String CLUSTER = "golden-cluster";
    static final long TS = 1700000000123L;

    static final StringBuilder OUT = new StringBuilder();

    static void emit(String id, Message m, int version) {
        short v = (short) version;
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = m.size(cache, v);
        ByteBuffer buf = ByteBuffer.allocate(size);
        m.write(new ByteBufferAccessor(buf), cache, v);
        if (buf.position() != size) {
            throw new IllegalStateException(id + ": wrote " + buf.position() + " of " + size + " bytes");
        }
        buf.flip();
        line(id, buf);
    }

    static void line(String id, ByteBuffer buf) {
        StringBuilder hex = new StringBuilder(buf.remaining() * 2);
        ByteBuffer b = buf.duplicate();
        while (b.hasRemaining()) {
            hex.append(String.format("%02x", b.get() & 0xff));
        }
        OUT.append(id).append(' ').append(hex.length() == 0 ? "-" : hex).append('\n');
    }

    @SafeVarargs
    static <T, C extends Collection<T>> C fill(C c, T... items) {
        Collections.addAll(c, items);
        return c;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    // -- record batches -----------------------------------------------------------------------------

    static SimpleRecord[] sampleRecords() {
        return new SimpleRecord[] {
            new SimpleRecord(TS, utf8("k1"), utf8("value-one")),
            new SimpleRecord(TS + 5, null, utf8("value-two")),
            new SimpleRecord(TS + 9, utf8("k3"), null),
        };
    }

    static MemoryRecords plainBatch() {
        return MemoryRecords.withRecords(RecordBatch.MAGIC_VALUE_V2, 100L, Compression.NONE,
            TimestampType.CREATE_TIME, -1L, (short) -1, -1, 6, false, sampleRecords());
    }

    static void records() {
        line("records:none", plainBatch().buffer());
        String[] codecs = {"gzip", "snappy", "lz4", "zstd"};
        for (String codec : codecs) {
            try {
                MemoryRecords r = MemoryRecords.withRecords(RecordBatch.MAGIC_VALUE_V2, 200L,
                    Compression.of(codec).build(), TimestampType.CREATE_TIME, 4000L, (short) 2, 17, 8, false,
                    sampleRecords());
                line("records:" + codec, r.buffer());
            } catch (Throwable e) {  // codec library not on the classpath: the test skips that row
                OUT.append("records:").append(codec).append(" !").append(e.getClass().getSimpleName()).append('\n');
            }
        }
        ByteBuffer scratch = ByteBuffer.allocate(512);
        line("records:leader-change", MemoryRecords.withLeaderChangeMessage(500L, TS, 9, scratch,
            leaderChange(0)).buffer());
        scratch = ByteBuffer.allocate(512);
        line("records:snapshot-header", MemoryRecords.withSnapshotHeaderRecord(0L, TS, 9, scratch,
            new SnapshotHeaderRecord().setVersion((short) 0).setLastContainedLogTimestamp(TS)).buffer());
        scratch = ByteBuffer.allocate(512);
        line("records:snapshot-footer", MemoryRecords.withSnapshotFooterRecord(3L, TS, 9, scratch,
            new SnapshotFooterRecord().setVersion((short) 0)).buffer());
    }

    // -- Fetch --------------------------------------------------------------------------------------

    static FetchRequestData fetchRequest(int v) {
        FetchRequestData.FetchPartition p = new FetchRequestData.FetchPartition()
            .setPartition(0).setFetchOffset(1234L).setPartitionMaxBytes(65536);
        if (v >= 5) p.setLogStartOffset(10L);
        if (v >= 9) p.setCurrentLeaderEpoch(7);
        if (v >= 12) p.setLastFetchedEpoch(6);
        if (v >= 17) p.setReplicaDirectoryId(U2);
        FetchRequestData.FetchTopic t = new FetchRequestData.FetchTopic().setPartitions(List.of(p));
        if (v <= 12) t.setTopic(META); else t.setTopicId(TOPIC);
        FetchRequestData d = new FetchRequestData().setMaxWaitMs(500).setMinBytes(1).setTopics(List.of(t));
        if (v >= 3) d.setMaxBytes(1048576);
        if (v >= 4) d.setIsolationLevel((byte) 1);
        if (v >= 7) {
            d.setSessionId(42).setSessionEpoch(5);
            FetchRequestData.ForgottenTopic f = new FetchRequestData.ForgottenTopic().setPartitions(List.of(1, 2));
            if (v <= 12) f.setTopic("old-topic"); else f.setTopicId(U3);
            d.setForgottenTopicsData(List.of(f));
        }
        if (v >= 11) d.setRackId("rack-a");
        if (v >= 12) d.setClusterId(CLUSTER);
        if (v <= 14) d.setReplicaId(3);
        else d.setReplicaState(new FetchRequestData.ReplicaState().setReplicaId(3).setReplicaEpoch(77L));
        return d;
    }

    static FetchResponseData fetchResponse(int v) {
        FetchResponseData.PartitionData p0 = new FetchResponseData.PartitionData()
            .setPartitionIndex(0).setHighWatermark(1000L).setRecords(plainBatch());
        if (v >= 4) {
            p0.setLastStableOffset(990L).setAbortedTransactions(List.of(
                new FetchResponseData.AbortedTransaction().setProducerId(9000L).setFirstOffset(950L)));
        }
        if (v >= 5) p0.setLogStartOffset(5L);
        FetchResponseData.PartitionData p1 = new FetchResponseData.PartitionData().setPartitionIndex(1)
            .setErrorCode((short) 6).setHighWatermark(-1L);
        if (v >= 12) {
            p0.setDivergingEpoch(new FetchResponseData.EpochEndOffset().setEpoch(4).setEndOffset(800L))
              .setSnapshotId(new FetchResponseData.SnapshotId().setEndOffset(700L).setEpoch(3));
            p1.setCurrentLeader(new FetchResponseData.LeaderIdAndEpoch().setLeaderId(2).setLeaderEpoch(9));
            p1.unknownTaggedFields().add(new RawTaggedField(5, new byte[] {1, 2, 3}));
        }
        if (v >= 4) p1.setAbortedTransactions(null);
        FetchResponseData.FetchableTopicResponse t = new FetchResponseData.FetchableTopicResponse()
            .setPartitions(List.of(p0, p1));
        if (v <= 12) t.setTopic(META); else t.setTopicId(TOPIC);
        FetchResponseData d = new FetchResponseData().setResponses(List.of(t));
        if (v >= 1) d.setThrottleTimeMs(25);
        if (v >= 7) d.setSessionId(42);
        if (v >= 16) {
            d.setNodeEndpoints(fill(new FetchResponseData.NodeEndpointCollection(),
                new FetchResponseData.NodeEndpoint().setNodeId(2).setHost("broker-2.example").setPort(9092).setRack("r2"),
                new FetchResponseData.NodeEndpoint().setNodeId(3).setHost("h3").setPort(9093).setRack(null)));
        }
        return d;
    }

    static FetchSnapshotRequestData fetchSnapshotRequest(int v) {
        FetchSnapshotRequestData.PartitionSnapshot p = new FetchSnapshotRequestData.PartitionSnapshot()
            .setPartition(0).setCurrentLeaderEpoch(5).setPosition(8192L)
            .setSnapshotId(new FetchSnapshotRequestData.SnapshotId().setEndOffset(1000L).setEpoch(4));
        if (v >= 1) p.setReplicaDirectoryId(U2);
        return new FetchSnapshotRequestData().setClusterId(CLUSTER).setReplicaId(2).setMaxBytes(1048576)
            .setTopics(List.of(new FetchSnapshotRequestData.TopicSnapshot().setName(META).setPartitions(List.of(p))));
    }

    static FetchSnapshotResponseData fetchSnapshotResponse(int v) {
        FetchSnapshotResponseData.PartitionSnapshot p = new FetchSnapshotResponseData.PartitionSnapshot()
            .setIndex(0).setSnapshotId(new FetchSnapshotResponseData.SnapshotId().setEndOffset(1000L).setEpoch(4))
            .setCurrentLeader(new FetchSnapshotResponseData.LeaderIdAndEpoch().setLeaderId(1).setLeaderEpoch(5))
            .setSize(4096L).setPosition(8192L).setUnalignedRecords(plainBatch());
        FetchSnapshotResponseData d = new FetchSnapshotResponseData().setThrottleTimeMs(0)
            .setTopics(List.of(new FetchSnapshotResponseData.TopicSnapshot().setName(META).setPartitions(List.of(p))));
        if (v >= 1) {
            d.setNodeEndpoints(fill(new FetchSnapshotResponseData.NodeEndpointCollection(),
                new FetchSnapshotResponseData.NodeEndpoint().setNodeId(1).setHost("c1.example").setPort(9093)));
        }
        return d;
    }

    // -- KIP-595 quorum RPCs ----------------------------------------------------------------------

    static VoteRequestData voteRequest(int v) {
        VoteRequestData.PartitionData p = new VoteRequestData.PartitionData().setPartitionIndex(0)
            .setCandidateEpoch(5).setCandidateId(1).setLastOffsetEpoch(4).setLastOffset(1200L);
        VoteRequestData d = new VoteRequestData().setClusterId(CLUSTER)
            .setTopics(List.of(new VoteRequestData.TopicData().setTopicName(META).setPartitions(List.of(p))));
        if (v >= 1) {
            p.setCandidateDirectoryId(U1).setVoterDirectoryId(U2);
            d.setVoterId(2);
        }
        return d;
    }

    static VoteResponseData voteResponse(int v) {
        VoteResponseData.PartitionData p = new VoteResponseData.PartitionData().setPartitionIndex(0)
            .setLeaderId(-1).setLeaderEpoch(5).setVoteGranted(true);
        VoteResponseData d = new VoteResponseData()
            .setTopics(List.of(new VoteResponseData.TopicData().setTopicName(META).setPartitions(List.of(p))));
        if (v >= 1) {
            d.setNodeEndpoints(fill(new VoteResponseData.NodeEndpointCollection(),
                new VoteResponseData.NodeEndpoint().setNodeId(1).setHost("c1.example").setPort(9093)));
        }
        return d;
    }

    static BeginQuorumEpochRequestData beginQuorumEpochRequest(int v) {
        BeginQuorumEpochRequestData.PartitionData p = new BeginQuorumEpochRequestData.PartitionData()
            .setPartitionIndex(0).setLeaderId(1).setLeaderEpoch(5);
        BeginQuorumEpochRequestData d = new BeginQuorumEpochRequestData().setClusterId(CLUSTER).setTopics(
            List.of(new BeginQuorumEpochRequestData.TopicData().setTopicName(META).setPartitions(List.of(p))));
        if (v >= 1) {
            p.setVoterDirectoryId(U2);
            d.setVoterId(2).setLeaderEndpoints(fill(new BeginQuorumEpochRequestData.LeaderEndpointCollection(),
                new BeginQuorumEpochRequestData.LeaderEndpoint().setName("CONTROLLER").setHost("c1.example")
                    .setPort(9093)));
        }
        return d;
    }

    static BeginQuorumEpochResponseData beginQuorumEpochResponse(int v) {
        BeginQuorumEpochResponseData.PartitionData p = new BeginQuorumEpochResponseData.PartitionData()
            .setPartitionIndex(0).setLeaderId(1).setLeaderEpoch(5);
        BeginQuorumEpochResponseData d = new BeginQuorumEpochResponseData().setTopics(
            List.of(new BeginQuorumEpochResponseData.TopicData().setTopicName(META).setPartitions(List.of(p))));
        if (v >= 1) {
            d.setNodeEndpoints(fill(new BeginQuorumEpochResponseData.NodeEndpointCollection(),
                new BeginQuorumEpochResponseData.NodeEndpoint().setNodeId(1).setHost("c1.example").setPort(9093)));
        }
        return d;
    }

    static EndQuorumEpochRequestData endQuorumEpochRequest(int v) {
        EndQuorumEpochRequestData.PartitionData p = new EndQuorumEpochRequestData.PartitionData()
            .setPartitionIndex(0).setLeaderId(1).setLeaderEpoch(5);
        EndQuorumEpochRequestData d = new EndQuorumEpochRequestData().setClusterId(CLUSTER).setTopics(
            List.of(new EndQuorumEpochRequestData.TopicData().setTopicName(META).setPartitions(List.of(p))));
        if (v == 0) {
            p.setPreferredSuccessors(List.of(2, 3));
        } else {
            p.setPreferredCandidates(List.of(
                new EndQuorumEpochRequestData.ReplicaInfo().setCandidateId(2).setCandidateDirectoryId(U2),
                new EndQuorumEpochRequestData.ReplicaInfo().setCandidateId(3).setCandidateDirectoryId(U3)));
            d.setLeaderEndpoints(fill(new EndQuorumEpochRequestData.LeaderEndpointCollection(),
                new EndQuorumEpochRequestData.LeaderEndpoint().setName("CONTROLLER").setHost("c1.example")
                    .setPort(9093)));
        }
        return d;
    }

    static EndQuorumEpochResponseData endQuorumEpochResponse(int v) {
        EndQuorumEpochResponseData.PartitionData p = new EndQuorumEpochResponseData.PartitionData()
            .setPartitionIndex(0).setErrorCode((short) 74).setLeaderId(1).setLeaderEpoch(6);
        EndQuorumEpochResponseData d = new EndQuorumEpochResponseData().setTopics(
            List.of(new EndQuorumEpochResponseData.TopicData().setTopicName(META).setPartitions(List.of(p))));
        if (v >= 1) {
            d.setNodeEndpoints(fill(new EndQuorumEpochResponseData.NodeEndpointCollection(),
                new EndQuorumEpochResponseData.NodeEndpoint().setNodeId(1).setHost("c1.example").setPort(9093)));
        }
        return d;
    }

    static DescribeQuorumRequestData describeQuorumRequest(int v) {
        return new DescribeQuorumRequestData().setTopics(List.of(new DescribeQuorumRequestData.TopicData()
            .setTopicName(META).setPartitions(List.of(new DescribeQuorumRequestData.PartitionData().setPartitionIndex(0)))));
    }

    static DescribeQuorumResponseData.ReplicaState replica(int v, int id, Uuid dir, long leo, long ts) {
        DescribeQuorumResponseData.ReplicaState r = new DescribeQuorumResponseData.ReplicaState()
            .setReplicaId(id).setLogEndOffset(leo);
        if (v >= 1) r.setLastFetchTimestamp(ts).setLastCaughtUpTimestamp(ts);
        if (v >= 2) r.setReplicaDirectoryId(dir);
        return r;
    }

    static DescribeQuorumResponseData describeQuorumResponse(int v) {
        DescribeQuorumResponseData.PartitionData p = new DescribeQuorumResponseData.PartitionData()
            .setPartitionIndex(0).setLeaderId(1).setLeaderEpoch(5).setHighWatermark(1500L)
            .setCurrentVoters(List.of(replica(v, 1, U1, 1600L, TS), replica(v, 2, U2, 1500L, TS - 100)))
            .setObservers(List.of(replica(v, 7, U3, 1400L, -1L)));
        DescribeQuorumResponseData d = new DescribeQuorumResponseData().setTopics(
            List.of(new DescribeQuorumResponseData.TopicData().setTopicName(META).setPartitions(List.of(p))));
        if (v >= 2) {
            d.setErrorMessage(null);
            p.setErrorMessage("all good");
            DescribeQuorumResponseData.Node node = new DescribeQuorumResponseData.Node().setNodeId(1)
                .setListeners(fill(new DescribeQuorumResponseData.ListenerCollection(),
                    new DescribeQuorumResponseData.Listener().setName("CONTROLLER").setHost("c1.example").setPort(9093)));
            d.setNodes(fill(new DescribeQuorumResponseData.NodeCollection(), node));
        }
        return d;
    }

    // -- KIP-497 / KIP-590 / KIP-631 ------------------------------------------------------------

    static AlterPartitionRequestData alterPartitionRequest(int v) {
        AlterPartitionRequestData.PartitionData p = new AlterPartitionRequestData.PartitionData()
            .setPartitionIndex(0).setLeaderEpoch(4).setPartitionEpoch(8);
        if (v >= 1) p.setLeaderRecoveryState((byte) 1);
        if (v <= 2) {
            p.setNewIsr(List.of(1, 2));
        } else {
            p.setNewIsrWithEpochs(List.of(
                new AlterPartitionRequestData.BrokerState().setBrokerId(1).setBrokerEpoch(100L),
                new AlterPartitionRequestData.BrokerState().setBrokerId(2).setBrokerEpoch(101L)));
        }
        AlterPartitionRequestData.TopicData t = new AlterPartitionRequestData.TopicData().setPartitions(List.of(p));
        if (v <= 1) t.setTopicName("alpha"); else t.setTopicId(TOPIC);
        return new AlterPartitionRequestData().setBrokerId(1).setBrokerEpoch(100L).setTopics(List.of(t));
    }

    static AlterPartitionResponseData alterPartitionResponse(int v) {
        AlterPartitionResponseData.PartitionData ok = new AlterPartitionResponseData.PartitionData()
            .setPartitionIndex(0).setLeaderId(1).setLeaderEpoch(4).setIsr(List.of(1, 2)).setPartitionEpoch(9);
        AlterPartitionResponseData.PartitionData fenced = new AlterPartitionResponseData.PartitionData()
            .setPartitionIndex(1).setErrorCode((short) 74).setLeaderId(-1).setLeaderEpoch(-1).setIsr(List.of())
            .setPartitionEpoch(-1);
        if (v >= 1) ok.setLeaderRecoveryState((byte) 0);
        AlterPartitionResponseData.TopicData t = new AlterPartitionResponseData.TopicData()
            .setPartitions(List.of(ok, fenced));
        if (v <= 1) t.setTopicName("alpha"); else t.setTopicId(TOPIC);
        return new AlterPartitionResponseData().setThrottleTimeMs(0).setTopics(List.of(t));
    }

    static EnvelopeRequestData envelopeRequest() {
        return new EnvelopeRequestData().setRequestData(ByteBuffer.wrap(utf8("inner-request-bytes")))
            .setRequestPrincipal(utf8("User:alice")).setClientHostAddress(new byte[] {127, 0, 0, 1});
    }

    static BrokerRegistrationRequestData brokerRegistrationRequest(int v) {
        BrokerRegistrationRequestData d = new BrokerRegistrationRequestData().setBrokerId(4).setClusterId(CLUSTER)
            .setIncarnationId(U3)
            .setListeners(fill(new BrokerRegistrationRequestData.ListenerCollection(),
                new BrokerRegistrationRequestData.Listener().setName("PLAINTEXT").setHost("b4.example").setPort(9092)
                    .setSecurityProtocol((short) 0),
                new BrokerRegistrationRequestData.Listener().setName("SSL").setHost("b4.example").setPort(9094)
                    .setSecurityProtocol((short) 1)))
            .setFeatures(fill(new BrokerRegistrationRequestData.FeatureCollection(),
                new BrokerRegistrationRequestData.Feature().setName("metadata.version")
                    .setMinSupportedVersion((short) 1).setMaxSupportedVersion((short) 21),
                new BrokerRegistrationRequestData.Feature().setName("kraft.version")
                    .setMinSupportedVersion((short) 0).setMaxSupportedVersion((short) 1)))
            .setRack("r4");
        if (v >= 1) d.setIsMigratingZkBroker(true);
        if (v >= 2) d.setLogDirs(List.of(U1, U2));
        if (v >= 3) d.setPreviousBrokerEpoch(55L);
        return d;
    }

    static BrokerHeartbeatRequestData brokerHeartbeatRequest(int v) {
        BrokerHeartbeatRequestData d = new BrokerHeartbeatRequestData().setBrokerId(4).setBrokerEpoch(77L)
            .setCurrentMetadataOffset(12345L).setWantFence(false).setWantShutDown(true);
        if (v >= 1) d.setOfflineLogDirs(List.of(U2));
        return d;
    }

    // -- ApiVersions / Metadata --------------------------------------------------------------------

    static ApiVersionsRequestData apiVersionsRequest(int v) {
        ApiVersionsRequestData d = new ApiVersionsRequestData();
        if (v >= 3) {
            d.setClientSoftwareName("kraftwire-golden").setClientSoftwareVersion("1.2.3");
            d.unknownTaggedFields().add(new RawTaggedField(7, utf8("future")));
        }
        return d;
    }

    static ApiVersionsResponseData apiVersionsResponse(int v) {
        ApiVersionsResponseData d = new ApiVersionsResponseData().setApiKeys(fill(
            new ApiVersionsResponseData.ApiVersionCollection(),
            new ApiVersionsResponseData.ApiVersion().setApiKey((short) 1).setMinVersion((short) 0).setMaxVersion((short) 17),
            new ApiVersionsResponseData.ApiVersion().setApiKey((short) 18).setMinVersion((short) 0).setMaxVersion((short) 4),
            new ApiVersionsResponseData.ApiVersion().setApiKey((short) 52).setMinVersion((short) 0).setMaxVersion((short) 1)));
        if (v >= 1) d.setThrottleTimeMs(12);
        if (v >= 3) {
            d.setSupportedFeatures(fill(new ApiVersionsResponseData.SupportedFeatureKeyCollection(),
                new ApiVersionsResponseData.SupportedFeatureKey().setName("kraft.version")
                    .setMinVersion((short) 0).setMaxVersion((short) 1),
                new ApiVersionsResponseData.SupportedFeatureKey().setName("metadata.version")
                    .setMinVersion((short) 1).setMaxVersion((short) 21)));
            d.setFinalizedFeaturesEpoch(88L);
            d.setFinalizedFeatures(fill(new ApiVersionsResponseData.FinalizedFeatureKeyCollection(),
                new ApiVersionsResponseData.FinalizedFeatureKey().setName("metadata.version")
                    .setMaxVersionLevel((short) 21).setMinVersionLevel((short) 1)));
            d.setZkMigrationReady(true);
        }
        return d;
    }

    static MetadataRequestData metadataRequest(int v) {
        List<MetadataRequestData.MetadataRequestTopic> topics = new ArrayList<>();
        topics.add(new MetadataRequestData.MetadataRequestTopic().setName("alpha"));
        if (v >= 12) topics.add(new MetadataRequestData.MetadataRequestTopic().setTopicId(TOPIC).setName(null));
        MetadataRequestData d = new MetadataRequestData().setTopics(topics);
        if (v >= 4) d.setAllowAutoTopicCreation(false);
        if (v >= 8 && v <= 10) d.setIncludeClusterAuthorizedOperations(true);
        if (v >= 8) d.setIncludeTopicAuthorizedOperations(true);
        return d;
    }

    static MetadataResponseData metadataResponse(int v) {
        MetadataResponseData.MetadataResponseBroker b1 = new MetadataResponseData.MetadataResponseBroker()
            .setNodeId(1).setHost("b1.example").setPort(9092);
        MetadataResponseData.MetadataResponseBroker b2 = new MetadataResponseData.MetadataResponseBroker()
            .setNodeId(2).setHost("b2.example").setPort(9093).setRack(null);
        if (v >= 1) b1.setRack("r1");
        MetadataResponseData.MetadataResponsePartition p = new MetadataResponseData.MetadataResponsePartition()
            .setPartitionIndex(0).setLeaderId(1).setReplicaNodes(List.of(1, 2, 3)).setIsrNodes(List.of(1, 2));
        if (v >= 5) p.setOfflineReplicas(List.of(3));
        if (v >= 7) p.setLeaderEpoch(4);
        MetadataResponseData.MetadataResponseTopic alpha = new MetadataResponseData.MetadataResponseTopic()
            .setName("alpha").setPartitions(List.of(p));
        MetadataResponseData.MetadataResponseTopic missing = new MetadataResponseData.MetadataResponseTopic()
            .setErrorCode((short) 3).setName("missing").setPartitions(List.of());
        if (v >= 8) alpha.setTopicAuthorizedOperations(0x0ff8);
        if (v >= 10) alpha.setTopicId(TOPIC);
        MetadataResponseData.MetadataResponseTopicCollection topics = fill(
            new MetadataResponseData.MetadataResponseTopicCollection(), alpha, missing);
        if (v >= 12) {
            topics.add(new MetadataResponseData.MetadataResponseTopic().setErrorCode((short) 100).setName(null)
                .setTopicId(U3).setPartitions(List.of()));
        }
        MetadataResponseData d = new MetadataResponseData()
            .setBrokers(fill(new MetadataResponseData.MetadataResponseBrokerCollection(), b1, b2))
            .setTopics(topics);
        if (v >= 1) d.setControllerId(1);
        if (v >= 2) d.setClusterId(CLUSTER);
        if (v >= 3) d.setThrottleTimeMs(3);
        if (v >= 8 && v <= 10) d.setClusterAuthorizedOperations(0x1234);
        return d;
    }

    // -- control records ---------------------------------------------------------------------------

    static LeaderChangeMessage leaderChange(int v) {
        List<LeaderChangeMessage.Voter> voters = new ArrayList<>();
        List<LeaderChangeMessage.Voter> granting = new ArrayList<>();
        Uuid[] dirs = {U1, U2, U3};
        for (int id = 1; id <= 3; id++) {
            LeaderChangeMessage.Voter voter = new LeaderChangeMessage.Voter().setVoterId(id);
            if (v >= 1) voter.setVoterDirectoryId(dirs[id - 1]);
            voters.add(voter);
            if (id <= 2) granting.add(voter.duplicate());
        }
        return new LeaderChangeMessage().setVersion((short) v).setLeaderId(1).setVoters(voters)
            .setGrantingVoters(granting);
    }

    static VotersRecord votersRecord() {
        List<VotersRecord.Voter> voters = new ArrayList<>();
        Uuid[] dirs = {U1, U2};
        for (int id = 1; id <= 2; id++) {
            voters.add(new VotersRecord.Voter().setVoterId(id).setVoterDirectoryId(dirs[id - 1])
                .setEndpoints(fill(new VotersRecord.EndpointCollection(),
                    new VotersRecord.Endpoint().setName("CONTROLLER").setHost("c" + id + ".example").setPort(9093)))
                .setKRaftVersionFeature(new VotersRecord.KRaftVersionFeature()
                    .setMinSupportedVersion((short) 0).setMaxSupportedVersion((short) 1)));
        }
        return new VotersRecord().setVersion((short) 0).setVoters(voters);
    }

    public static void main(String[] args) {
        for (int v : new int[] {0, 4, 12, 13, 15, 17}) emit("FetchRequest:" + v, fetchRequest(v), v);
        for (int v : new int[] {0, 4, 12, 13, 16, 17}) emit("FetchResponse:" + v, fetchResponse(v), v);
        for (int v = 0; v <= 1; v++) {
            emit("FetchSnapshotRequest:" + v, fetchSnapshotRequest(v), v);
            emit("FetchSnapshotResponse:" + v, fetchSnapshotResponse(v), v);
            emit("VoteRequest:" + v, voteRequest(v), v);
            emit("VoteResponse:" + v, voteResponse(v), v);
            emit("BeginQuorumEpochRequest:" + v, beginQuorumEpochRequest(v), v);
            emit("BeginQuorumEpochResponse:" + v, beginQuorumEpochResponse(v), v);
            emit("EndQuorumEpochRequest:" + v, endQuorumEpochRequest(v), v);
            emit("EndQuorumEpochResponse:" + v, endQuorumEpochResponse(v), v);
            emit("BrokerHeartbeatRequest:" + v, brokerHeartbeatRequest(v), v);
            emit("BrokerHeartbeatResponse:" + v, new BrokerHeartbeatResponseData().setThrottleTimeMs(0)
                .setIsCaughtUp(true).setIsFenced(false).setShouldShutDown(false), v);
            emit("LeaderChangeMessage:" + v, leaderChange(v), v);
            emit("ResponseHeader:" + v, new ResponseHeaderData().setCorrelationId(77), v);
        }
        for (int v : new int[] {0, 1, 2}) {
            emit("DescribeQuorumRequest:" + v, describeQuorumRequest(v), v);
            emit("DescribeQuorumResponse:" + v, describeQuorumResponse(v), v);
            emit("RequestHeader:" + v, new RequestHeaderData().setRequestApiKey((short) 1)
                .setRequestApiVersion((short) 12).setCorrelationId(77).setClientId(v >= 1 ? "golden-client" : null), v);
        }
        for (int v : new int[] {0, 1, 2, 3}) {
            emit("AlterPartitionRequest:" + v, alterPartitionRequest(v), v);
            emit("AlterPartitionResponse:" + v, alterPartitionResponse(v), v);
        }
        emit("EnvelopeRequest:0", envelopeRequest(), 0);
        emit("EnvelopeResponse:0", new EnvelopeResponseData().setResponseData(ByteBuffer.wrap(utf8("inner-response"))), 0);
        emit("EnvelopeResponse:0:null", new EnvelopeResponseData().setResponseData(null).setErrorCode((short) 41), 0);
        for (int v : new int[] {0, 1, 2, 3, 4}) {
            emit("BrokerRegistrationRequest:" + v, brokerRegistrationRequest(v), v);
            emit("BrokerRegistrationResponse:" + v, new BrokerRegistrationResponseData().setThrottleTimeMs(0)
                .setBrokerEpoch(77L), v);
            emit("ApiVersionsRequest:" + v, apiVersionsRequest(v), v);
            emit("ApiVersionsResponse:" + v, apiVersionsResponse(v), v);
        }
        for (int v : new int[] {0, 1, 4, 8, 9, 10, 12}) {
            emit("MetadataRequest:" + v, metadataRequest(v), v);
            emit("MetadataResponse:" + v, metadataResponse(v), v);
        }
        emit("VotersRecord:0", votersRecord(), 0);
        emit("KRaftVersionRecord:0", new KRaftVersionRecord().setVersion((short) 0).setKRaftVersion((short) 1), 0);
        emit("SnapshotHeaderRecord:0", new SnapshotHeaderRecord().setVersion((short) 0)
            .setLastContainedLogTimestamp(TS), 0);
        emit("SnapshotFooterRecord:0", new SnapshotFooterRecord().setVersion((short) 0), 0);
        records();
        System.out.print(OUT);
        System.out.flush();
    }
}
