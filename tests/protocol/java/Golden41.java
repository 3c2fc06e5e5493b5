// Golden bytes from Apache Kafka 4.1's serializers (kafka-clients 4.1.0 and kafka-metadata 4.1.0) for the
// message versions Kafka 4.x added, for tests/protocol/test_golden_java41.py. Same output format as
// Golden.java: one "<case id> <hex bytes>" line per case.

import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.Collections;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.metadata.ClearElrRecord;
import org.apache.kafka.common.metadata.PartitionChangeRecord;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

public final class Golden41 {
    static final Uuid U1 = new Uuid(0x0101010101010101L, 0x1111111111111111L);
    static final Uuid U2 = new Uuid(0x0202020202020202L, 0x2222222222222222L);
    static final Uuid TOPIC = new Uuid(0x7a7a7a7a00000001L, 0x8000000000000042L);
    static final String META = "__cluster_metadata";
    static final String CLUSTER = "golden-cluster";

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
        StringBuilder hex = new StringBuilder(size * 2);
        while (buf.hasRemaining()) hex.append(String.format("%02x", buf.get() & 0xff));
        OUT.append(id).append(' ').append(hex.length() == 0 ? "-" : hex).append('\n');
    }

    @SafeVarargs
    static <T, C extends Collection<T>> C fill(C c, T... items) {
        Collections.addAll(c, items);
        return c;
    }

    static FetchRequestData fetchRequest() {
        FetchRequestData.FetchPartition p = new FetchRequestData.FetchPartition()
            .setPartition(0).setFetchOffset(1234L).setPartitionMaxBytes(65536).setLogStartOffset(10L)
            .setCurrentLeaderEpoch(7).setLastFetchedEpoch(6).setReplicaDirectoryId(U2).setHighWatermark(900L);
        return new FetchRequestData().setMaxWaitMs(500).setMinBytes(1).setMaxBytes(1048576)
            .setIsolationLevel((byte) 0).setSessionId(0).setSessionEpoch(-1).setClusterId(CLUSTER)
            .setReplicaState(new FetchRequestData.ReplicaState().setReplicaId(3).setReplicaEpoch(-1L))
            .setTopics(List.of(new FetchRequestData.FetchTopic().setTopicId(TOPIC).setPartitions(List.of(p))));
    }

    static FetchResponseData fetchResponse() {
        FetchResponseData.PartitionData p = new FetchResponseData.PartitionData().setPartitionIndex(0)
            .setHighWatermark(1000L).setLastStableOffset(1000L).setLogStartOffset(5L).setRecords(null)
            .setCurrentLeader(new FetchResponseData.LeaderIdAndEpoch().setLeaderId(2).setLeaderEpoch(9));
        return new FetchResponseData().setThrottleTimeMs(0).setSessionId(0)
            .setResponses(List.of(new FetchResponseData.FetchableTopicResponse().setTopicId(TOPIC)
                .setPartitions(List.of(p))))
            .setNodeEndpoints(fill(new FetchResponseData.NodeEndpointCollection(),
                new FetchResponseData.NodeEndpoint().setNodeId(2).setHost("c2.example").setPort(9093)));
    }

    static VoteRequestData voteRequest() {
        VoteRequestData.PartitionData p = new VoteRequestData.PartitionData().setPartitionIndex(0)
            .setReplicaEpoch(5).setReplicaId(1).setReplicaDirectoryId(U1).setVoterDirectoryId(U2)
            .setLastOffsetEpoch(4).setLastOffset(1200L).setPreVote(true);
        return new VoteRequestData().setClusterId(CLUSTER).setVoterId(2)
            .setTopics(List.of(new VoteRequestData.TopicData().setTopicName(META).setPartitions(List.of(p))));
    }

    static VoteResponseData voteResponse() {
        VoteResponseData.PartitionData p = new VoteResponseData.PartitionData().setPartitionIndex(0)
            .setLeaderId(-1).setLeaderEpoch(4).setVoteGranted(true);
        return new VoteResponseData()
            .setTopics(List.of(new VoteResponseData.TopicData().setTopicName(META).setPartitions(List.of(p))))
            .setNodeEndpoints(fill(new VoteResponseData.NodeEndpointCollection(),
                new VoteResponseData.NodeEndpoint().setNodeId(1).setHost("c1.example").setPort(9093)));
    }

    static MetadataResponseData metadataResponse() {
        MetadataResponseData.MetadataResponsePartition p = new MetadataResponseData.MetadataResponsePartition()
            .setPartitionIndex(0).setLeaderId(1).setLeaderEpoch(4).setReplicaNodes(List.of(1, 2))
            .setIsrNodes(List.of(1)).setOfflineReplicas(List.of());
        return new MetadataResponseData().setThrottleTimeMs(0).setClusterId(CLUSTER).setControllerId(1)
            .setBrokers(fill(new MetadataResponseData.MetadataResponseBrokerCollection(),
                new MetadataResponseData.MetadataResponseBroker().setNodeId(1).setHost("b1.example").setPort(9092)))
            .setTopics(fill(new MetadataResponseData.MetadataResponseTopicCollection(),
                new MetadataResponseData.MetadataResponseTopic().setName("alpha").setTopicId(TOPIC)
                    .setPartitions(List.of(p))))
            .setErrorCode((short) 129);
    }

    static DescribeClusterResponseData describeClusterResponse() {
        return new DescribeClusterResponseData().setThrottleTimeMs(0).setClusterId(CLUSTER).setControllerId(1)
            .setBrokers(fill(new DescribeClusterResponseData.DescribeClusterBrokerCollection(),
                new DescribeClusterResponseData.DescribeClusterBroker().setBrokerId(1).setHost("b1.example")
                    .setPort(9092).setIsFenced(false),
                new DescribeClusterResponseData.DescribeClusterBroker().setBrokerId(2).setHost("b2.example")
                    .setPort(9092).setRack("r2").setIsFenced(true)));
    }

    static UpdateFeaturesRequestData updateFeaturesRequest() {
        return new UpdateFeaturesRequestData().setTimeoutMs(30000).setValidateOnly(true)
            .setFeatureUpdates(fill(new UpdateFeaturesRequestData.FeatureUpdateKeyCollection(),
                new UpdateFeaturesRequestData.FeatureUpdateKey().setFeature("metadata.version")
                    .setMaxVersionLevel((short) 27).setUpgradeType((byte) 1),
                new UpdateFeaturesRequestData.FeatureUpdateKey().setFeature("group.version")
                    .setMaxVersionLevel((short) 1).setUpgradeType((byte) 1)));
    }

    static ProduceRequestData produceRequest() {
        return new ProduceRequestData().setTransactionalId(null).setAcks((short) -1).setTimeoutMs(30000)
            .setTopicData(fill(new ProduceRequestData.TopicProduceDataCollection(),
                new ProduceRequestData.TopicProduceData().setTopicId(TOPIC).setPartitionData(List.of(
                    new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(null)))));
    }

    static ProduceResponseData produceResponse() {
        return new ProduceResponseData().setThrottleTimeMs(0)
            .setResponses(fill(new ProduceResponseData.TopicProduceResponseCollection(),
                new ProduceResponseData.TopicProduceResponse().setTopicId(TOPIC).setPartitionResponses(List.of(
                    new ProduceResponseData.PartitionProduceResponse().setIndex(0).setErrorCode((short) 0)
                        .setBaseOffset(42L).setLogAppendTimeMs(-1L).setLogStartOffset(0L)))));
    }

    static OffsetCommitRequestData offsetCommitRequest() {
        return new OffsetCommitRequestData().setGroupId("g").setGenerationIdOrMemberEpoch(3).setMemberId("m-1")
            .setTopics(List.of(new OffsetCommitRequestData.OffsetCommitRequestTopic().setTopicId(TOPIC)
                .setPartitions(List.of(new OffsetCommitRequestData.OffsetCommitRequestPartition()
                    .setPartitionIndex(0).setCommittedOffset(77L).setCommittedLeaderEpoch(2)
                    .setCommittedMetadata("meta")))));
    }

    static OffsetFetchRequestData offsetFetchRequest() {
        return new OffsetFetchRequestData().setRequireStable(true)
            .setGroups(List.of(new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId("g")
                .setMemberId("m-1").setMemberEpoch(3)
                .setTopics(List.of(new OffsetFetchRequestData.OffsetFetchRequestTopics().setTopicId(TOPIC)
                    .setPartitionIndexes(List.of(0, 1))))));
    }

    static ListOffsetsRequestData listOffsetsRequest() {
        return new ListOffsetsRequestData().setReplicaId(-1).setIsolationLevel((byte) 1).setTimeoutMs(15000)
            .setTopics(List.of(new ListOffsetsRequestData.ListOffsetsTopic().setName(META).setPartitions(List.of(
                new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0).setCurrentLeaderEpoch(4)
                    .setTimestamp(-1L)))));
    }

    static DescribeGroupsResponseData describeGroupsResponse() {
        return new DescribeGroupsResponseData().setThrottleTimeMs(0).setGroups(List.of(
            new DescribeGroupsResponseData.DescribedGroup().setErrorCode((short) 69)
                .setErrorMessage("Group g is not a classic group.").setGroupId("g").setGroupState("")
                .setProtocolType("").setProtocolData("").setMembers(List.of())));
    }

    static PartitionRecord partitionRecord() {
        return new PartitionRecord().setPartitionId(0).setTopicId(TOPIC).setReplicas(List.of(1, 2, 3))
            .setIsr(List.of(1)).setLeader(1).setLeaderEpoch(6).setPartitionEpoch(9)
            .setDirectories(List.of(U1, U2, U1)).setEligibleLeaderReplicas(List.of(2)).setLastKnownElr(List.of(3));
    }

    static PartitionChangeRecord partitionChangeRecord() {
        return new PartitionChangeRecord().setPartitionId(0).setTopicId(TOPIC).setIsr(List.of(1, 2))
            .setEligibleLeaderReplicas(List.of()).setLastKnownElr(List.of(3));
    }

    public static void main(String[] args) {
        emit("FetchRequest:18", fetchRequest(), 18);
        emit("FetchResponse:18", fetchResponse(), 18);
        emit("VoteRequest:2", voteRequest(), 2);
        emit("VoteResponse:2", voteResponse(), 2);
        emit("MetadataRequest:13", new MetadataRequestData().setTopics(null).setAllowAutoTopicCreation(false)
            .setIncludeTopicAuthorizedOperations(false), 13);
        emit("MetadataResponse:13", metadataResponse(), 13);
        emit("DescribeClusterRequest:2", new DescribeClusterRequestData().setIncludeClusterAuthorizedOperations(false)
            .setEndpointType((byte) 1).setIncludeFencedBrokers(true), 2);
        emit("DescribeClusterResponse:2", describeClusterResponse(), 2);
        emit("UpdateFeaturesRequest:2", updateFeaturesRequest(), 2);
        emit("UpdateFeaturesResponse:2", new UpdateFeaturesResponseData().setThrottleTimeMs(0)
            .setErrorCode((short) 0).setErrorMessage(null), 2);
        emit("ProduceRequest:13", produceRequest(), 13);
        emit("ProduceResponse:13", produceResponse(), 13);
        emit("OffsetCommitRequest:10", offsetCommitRequest(), 10);
        emit("OffsetFetchRequest:10", offsetFetchRequest(), 10);
        emit("ListOffsetsRequest:10", listOffsetsRequest(), 10);
        emit("InitProducerIdRequest:6", new InitProducerIdRequestData().setTransactionalId("txn-1")
            .setTransactionTimeoutMs(60000).setProducerId(-1L).setProducerEpoch((short) -1)
            .setEnable2Pc(true).setKeepPreparedTxn(true), 6);
        emit("InitProducerIdResponse:6", new InitProducerIdResponseData().setThrottleTimeMs(0)
            .setErrorCode((short) 0).setProducerId(4000L).setProducerEpoch((short) 2)
            .setOngoingTxnProducerId(3999L).setOngoingTxnProducerEpoch((short) 1), 6);
        emit("DescribeGroupsResponse:6", describeGroupsResponse(), 6);
        emit("PartitionRecord:2", partitionRecord(), 2);
        emit("PartitionChangeRecord:2", partitionChangeRecord(), 2);
        emit("ClearElrRecord:0", new ClearElrRecord().setTopicName("alpha"), 0);
        System.out.print(OUT);
        System.out.flush();
    }
}
